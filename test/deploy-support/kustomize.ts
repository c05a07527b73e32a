// What `kubectl apply -k` would apply: `kubectl kustomize` itself where the machine has kubectl, else a
// small resolver of the features deploy/k8s uses (a kustomization using anything else is refused, never
// half-read), so `pnpm test` checks the overlays on a machine without kubectl too.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { parse, parseAllDocuments } from 'yaml';

/** A Kubernetes object as plain data. */
export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  [field: string]: unknown;
}

type Json = Record<string, unknown>;

interface Kustomization {
  resources?: string[];
  namespace?: string;
  labels?: Array<{ pairs: Record<string, string>; includeSelectors?: boolean; includeTemplates?: boolean }>;
  images?: Array<{ name: string; newName?: string; newTag?: string }>;
  replicas?: Array<{ name: string; count: number }>;
  configMapGenerator?: Array<{ name: string; behavior?: 'create' | 'merge' | 'replace'; literals?: string[] }>;
  patches?: Array<{ path: string }>;
}

const KNOWN_FIELDS = new Set(['apiVersion', 'kind', 'resources', 'namespace', 'labels', 'images', 'replicas', 'configMapGenerator', 'patches']);

// Strategic merge: the lists Kubernetes merges item by item, and the field that identifies an item.
const MERGE_KEYS: Record<string, string> = {
  containers: 'name',
  initContainers: 'name',
  env: 'name',
  volumes: 'name',
  volumeMounts: 'mountPath',
  ports: 'containerPort',
};

const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);

/** Reads every YAML document of a file; a syntax error throws, naming the file. */
export function readManifests(path: string): K8sObject[] {
  return parseAllDocuments(readFileSync(path, 'utf8')).map((doc) => {
    if (doc.errors.length > 0) throw new Error(`${path}: ${doc.errors.map((e) => e.message).join('; ')}`);
    return doc.toJSON() as K8sObject;
  });
}

/** Applies a strategic merge patch to `target` in place: maps merge, `null` deletes, keyed lists merge by key. */
export function strategicMerge(target: Json, patch: Json): void {
  for (const [field, value] of Object.entries(patch)) {
    if (value === null) {
      Reflect.deleteProperty(target, field);
    } else if (Array.isArray(value) && MERGE_KEYS[field] !== undefined && Array.isArray(target[field])) {
      const key = MERGE_KEYS[field];
      const items = target[field] as Json[];
      for (const item of value as Json[]) {
        const at = items.findIndex((existing) => existing[key] === item[key]);
        if (item.$patch === 'delete') {
          if (at === -1) throw new Error(`patch deletes ${field} ${String(item[key])}, which is not there`);
          items.splice(at, 1);
        } else if (at === -1) {
          items.push(structuredClone(item));
        } else {
          strategicMerge(items[at]!, item);
        }
      }
    } else if (isObject(value) && isObject(target[field])) {
      strategicMerge(target[field], value);
    } else {
      target[field] = structuredClone(value);
    }
  }
}

/** The pod spec of a workload (Deployment, Job), if it has one. */
export function podSpec(object: K8sObject): Json | undefined {
  const spec = (object.spec as Json | undefined)?.template as Json | undefined;
  return spec?.spec as Json | undefined;
}

/** Every container of a pod spec, init containers included. */
export function containersOf(object: K8sObject): Json[] {
  const pod = podSpec(object);
  return [...((pod?.initContainers as Json[] | undefined) ?? []), ...((pod?.containers as Json[] | undefined) ?? [])];
}

interface Layer {
  objects: K8sObject[];
  generated: Set<K8sObject>;
}

function buildLayer(dir: string): Layer {
  const file = join(dir, 'kustomization.yaml');
  const k = parse(readFileSync(file, 'utf8')) as Kustomization;
  const unknown = Object.keys(k).filter((field) => !KNOWN_FIELDS.has(field));
  if (unknown.length > 0) throw new Error(`${file}: the test resolver does not implement ${unknown.join(', ')}`);

  const layer: Layer = { objects: [], generated: new Set() };
  for (const resource of k.resources ?? []) {
    const path = join(dir, resource);
    if (statSync(path).isDirectory()) {
      const inner = buildLayer(path);
      layer.objects.push(...inner.objects);
      for (const g of inner.generated) layer.generated.add(g);
    } else {
      layer.objects.push(...readManifests(path));
    }
  }

  for (const generator of k.configMapGenerator ?? []) {
    const data = Object.fromEntries(
      (generator.literals ?? []).map((literal: unknown) => {
        // `- KEY=value:` is a YAML map, not a string: kustomize refuses it too.
        if (typeof literal !== 'string') throw new Error(`${file}: literal is not a string: ${JSON.stringify(literal)}`);
        const at = literal.indexOf('=');
        if (at < 1) throw new Error(`${file}: literal without a name: ${literal}`);
        return [literal.slice(0, at), literal.slice(at + 1)];
      }),
    );
    const existing = layer.objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name === generator.name);
    const behavior = generator.behavior ?? 'create';
    if (behavior === 'create') {
      if (existing) throw new Error(`${file}: ConfigMap ${generator.name} already exists; use behavior merge`);
      const configMap: K8sObject = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: generator.name }, data };
      layer.objects.push(configMap);
      layer.generated.add(configMap);
    } else {
      if (!existing || !layer.generated.has(existing)) throw new Error(`${file}: no generated ConfigMap ${generator.name} to ${behavior}`);
      existing.data = behavior === 'merge' ? { ...(existing.data as Json), ...data } : data;
    }
  }

  for (const { path } of k.patches ?? []) {
    for (const patch of readManifests(join(dir, path))) {
      const target = layer.objects.find((o) => o.kind === patch.kind && o.metadata.name === patch.metadata.name);
      if (!target) throw new Error(`${join(dir, path)}: no ${patch.kind} ${patch.metadata.name} to patch`);
      strategicMerge(target as unknown as Json, patch as unknown as Json);
    }
  }

  for (const { name, count } of k.replicas ?? []) {
    const target = layer.objects.find((o) => o.kind === 'Deployment' && o.metadata.name === name);
    if (!target) throw new Error(`${file}: no Deployment ${name} for replicas`);
    (target.spec as Json).replicas = count;
  }

  for (const image of k.images ?? []) {
    for (const container of layer.objects.flatMap(containersOf)) {
      const current = String(container.image);
      const [repository, tag] = current.split(':') as [string, string | undefined];
      if (repository !== image.name) continue;
      const newTag = image.newTag ?? tag;
      container.image = `${image.newName ?? repository}${newTag === undefined ? '' : `:${newTag}`}`;
    }
  }

  for (const { pairs, includeSelectors, includeTemplates } of k.labels ?? []) {
    if (includeSelectors || includeTemplates) throw new Error(`${file}: the test resolver adds labels to metadata only`);
    for (const object of layer.objects) object.metadata.labels = { ...object.metadata.labels, ...pairs };
  }

  if (k.namespace !== undefined) for (const object of layer.objects) object.metadata.namespace = k.namespace;

  const ids = new Set<string>();
  for (const object of layer.objects) {
    const id = `${object.kind}/${object.metadata.namespace ?? ''}/${object.metadata.name}`;
    if (ids.has(id)) throw new Error(`${file}: ${id} is defined twice`);
    ids.add(id);
  }
  return layer;
}

let kubectl: boolean | undefined;

/** True when `kubectl` (with its built-in kustomize) runs here; asked once. */
function hasKubectl(): boolean {
  if (kubectl === undefined) {
    try {
      execFileSync('kubectl', ['version', '--client'], { stdio: 'ignore', timeout: 10_000 });
      kubectl = true;
    } catch {
      kubectl = false;
    }
  }
  return kubectl;
}

/** The objects `kustomize build <dir>` produces: by `kubectl kustomize` where there is kubectl, else by the resolver. */
export function kustomizeBuild(dir: string): K8sObject[] {
  if (!hasKubectl()) return resolveKustomization(dir);
  let yaml: string;
  try {
    yaml = execFileSync('kubectl', ['kustomize', dir], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 60_000 });
  } catch (err) {
    const stderr = String((err as { stderr?: unknown }).stderr ?? '').trim();
    throw new Error(`kubectl kustomize ${dir}: ${stderr === '' ? String(err) : stderr}`, { cause: err });
  }
  return parseAllDocuments(yaml).map((doc) => doc.toJSON() as K8sObject);
}

/**
 * The resolver: the objects `kustomize build <dir>` produces for the features deploy/k8s uses. Generated
 * ConfigMaps get a content-hash suffix (so a config change rolls the pods), and every reference to them
 * follows the new name.
 */
export function resolveKustomization(dir: string): K8sObject[] {
  const { objects, generated } = buildLayer(dir);
  const renamed = new Map<string, string>();
  for (const configMap of generated) {
    const hash = createHash('sha256').update(JSON.stringify(configMap.data)).digest('hex').slice(0, 10);
    renamed.set(configMap.metadata.name, `${configMap.metadata.name}-${hash}`);
    configMap.metadata.name = `${configMap.metadata.name}-${hash}`;
  }
  const follow = (ref: Json | undefined) => {
    if (ref !== undefined && renamed.has(String(ref.name))) ref.name = renamed.get(String(ref.name));
  };
  for (const object of objects) {
    for (const container of containersOf(object)) {
      for (const from of (container.envFrom as Json[] | undefined) ?? []) follow(from.configMapRef as Json | undefined);
      for (const entry of (container.env as Json[] | undefined) ?? []) follow((entry.valueFrom as Json | undefined)?.configMapKeyRef as Json | undefined);
    }
    for (const volume of (podSpec(object)?.volumes as Json[] | undefined) ?? []) follow(volume.configMap as Json | undefined);
  }
  return objects;
}
