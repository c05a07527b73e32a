// Every Secret a built overlay's pods read must exist when they start: created by the overlay itself, or
// listed in the Secret table of docs/deploy.md as the operator's to create in that environment. Otherwise the pods
// stay in CreateContainerConfigError (a secretKeyRef, secretRef or secret volume naming nothing).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { AppEnv } from '@platform/service-kit';
import { type K8sObject, podSpec } from './kustomize.ts';

type Json = Record<string, unknown>;

/** A Secret docs/deploy.md tells the operator to create: in which environments, and its keys. */
export interface OperatorSecret {
  name: string;
  /** Undefined: every environment. */
  envs: readonly string[] | undefined;
  keys: ReadonlySet<string>;
}

/**
 * The rows of the table of docs/deploy.md `| Secret (per namespace) | keys |`: "`name`", optionally followed by the
 * environments it is for in parentheses ("`gateway-secrets` (test, prod)"), and its keys in backticks.
 */
export function operatorSecrets(root: string): OperatorSecret[] {
  const lines = readFileSync(join(root, 'docs', 'deploy.md'), 'utf8').split('\n');
  const header = lines.findIndex((line) => /^\|\s*Secret \(per namespace\)\s*\|\s*keys\s*\|$/.test(line.trim()));
  if (header === -1) throw new Error('docs/deploy.md has no `| Secret (per namespace) | keys |` table');
  const secrets: OperatorSecret[] = [];
  for (const line of lines.slice(header + 2)) {
    if (!line.startsWith('|')) break;
    const [, first = '', keys = ''] = line.split('|').map((cell) => cell.trim());
    const row = /^`([a-z0-9-]+)`(?:\s*\(([a-z, ]+)\))?$/.exec(first);
    if (row === null) throw new Error(`docs/deploy.md Secret table: cannot read the row "${line}"`);
    secrets.push({
      name: row[1]!,
      envs: row[2]?.split(',').map((env) => env.trim()),
      keys: new Set([...keys.matchAll(/`([^`]+)`/g)].map((m) => m[1]!)),
    });
  }
  return secrets;
}

interface SecretReference {
  where: string;
  secret: string;
  key: string | undefined;
  optional: boolean;
}

/** Every Secret the pods of `object` read: env and envFrom of each container, secret volumes, image pull secrets. */
function referencesOf(object: K8sObject): SecretReference[] {
  const pod = podSpec(object);
  if (pod === undefined) return [];
  const at = `${object.kind} ${object.metadata.name}`;
  const refs: SecretReference[] = [];
  const containers = [...((pod.initContainers as Json[] | undefined) ?? []), ...((pod.containers as Json[] | undefined) ?? [])];
  for (const container of containers) {
    const where = `${at} container ${String(container.name)}`;
    for (const entry of (container.env as Json[] | undefined) ?? []) {
      const ref = (entry.valueFrom as Json | undefined)?.secretKeyRef as Json | undefined;
      if (ref !== undefined) refs.push({ where: `${where} ${String(entry.name)}`, secret: String(ref.name), key: String(ref.key), optional: ref.optional === true });
    }
    for (const from of (container.envFrom as Json[] | undefined) ?? []) {
      const ref = from.secretRef as Json | undefined;
      if (ref !== undefined) refs.push({ where: `${where} envFrom`, secret: String(ref.name), key: undefined, optional: ref.optional === true });
    }
  }
  for (const volume of (pod.volumes as Json[] | undefined) ?? []) {
    const secret = volume.secret as Json | undefined;
    if (secret !== undefined) refs.push({ where: `${at} volume ${String(volume.name)}`, secret: String(secret.secretName), key: undefined, optional: secret.optional === true });
    for (const source of ((volume.projected as Json | undefined)?.sources as Json[] | undefined) ?? []) {
      const projected = source.secret as Json | undefined;
      if (projected !== undefined) refs.push({ where: `${at} volume ${String(volume.name)}`, secret: String(projected.name), key: undefined, optional: projected.optional === true });
    }
  }
  for (const pull of (pod.imagePullSecrets as Json[] | undefined) ?? []) refs.push({ where: `${at} imagePullSecrets`, secret: String(pull.name), key: undefined, optional: false });
  return refs;
}

/**
 * One line per Secret (or key of one) that a pod of the built overlay needs and that would not be there:
 * neither an object of the overlay nor listed in docs/deploy.md for `appEnv` (with that key). Optional
 * references need nothing.
 */
export function secretReferenceProblems(appEnv: AppEnv, objects: readonly K8sObject[], secrets: readonly OperatorSecret[]): string[] {
  const created = new Set(objects.filter((o) => o.kind === 'Secret').map((o) => o.metadata.name));
  const problems: string[] = [];
  for (const ref of objects.flatMap(referencesOf)) {
    if (ref.optional || created.has(ref.secret)) continue;
    const listed = secrets.find((s) => s.name === ref.secret && (s.envs === undefined || s.envs.includes(appEnv)));
    if (listed === undefined) {
      problems.push(`${appEnv} ${ref.where}: reads Secret ${ref.secret}, which the overlay does not create and docs/deploy.md does not list as the operator's to create in ${appEnv}`);
    } else if (ref.key !== undefined && !listed.keys.has(ref.key)) {
      problems.push(`${appEnv} ${ref.where}: reads key ${ref.key} of Secret ${ref.secret}, which docs/deploy.md does not list among its keys`);
    }
  }
  return problems;
}
