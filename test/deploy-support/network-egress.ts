// Egress of a built overlay's pods: each reaches what its settings name (DNS, Postgres, Redis, its upstreams, the
// OTLP collector, the mail and SMS providers) and nothing else. What a pod needs is read from the environment
// the overlay gives it; what it may reach from every NetworkPolicy that selects it (policies add up). A named
// port is resolved as Kubernetes does, on the destination's pods.
import { DEPLOYABLES, type EnvValue } from './deployables.ts';
import type { K8sObject } from './kustomize.ts';

type Json = Record<string, unknown>;

/** Where a need or a rule leads: the cluster's DNS, a platform deployable's pods, a namespace, or outside the cluster. */
type Peer = { kind: 'dns' } | { kind: 'app'; name: string } | { kind: 'namespace'; name: string } | { kind: 'outside' };

/** A destination a pod must reach, and the setting that names it. */
export interface EgressNeed {
  why: string;
  peer: Peer;
  port: number;
  protocol: 'TCP' | 'UDP';
}

const get = (value: unknown, ...path: string[]): unknown =>
  path.reduce<unknown>((at, key) => (typeof at === 'object' && at !== null ? (at as Json)[key] : undefined), value);

const SCHEME_PORTS: Record<string, number> = { 'postgres:': 5432, 'postgresql:': 5432, 'redis:': 6379, 'rediss:': 6379, 'http:': 80, 'https:': 443 };
/** Where the OTLP collector runs (README: Observability), on OTLP/HTTP's port. */
const OTLP_COLLECTOR = { namespace: 'monitoring', port: 4318 };

function literal(env: ReadonlyMap<string, EnvValue>, name: string): string | undefined {
  const value = env.get(name);
  return value !== undefined && 'literal' in value && value.literal.trim() !== '' ? value.literal : undefined;
}

/** The host and port of a URL variable (the scheme's port when it names none); undefined when it is a Secret. */
function urlOf(env: ReadonlyMap<string, EnvValue>, name: string): { host: string; port: number } | undefined {
  const raw = literal(env, name);
  if (raw === undefined || !URL.canParse(raw)) return undefined;
  const url = new URL(raw);
  return { host: url.hostname, port: url.port === '' ? (SCHEME_PORTS[url.protocol] ?? 0) : Number(url.port) };
}

/**
 * What a pod with this environment must reach: DNS, and every server its variables name (a Secret's URL on
 * its scheme's usual port); `traced` adds the OTLP collector, which a variable alone switches on.
 */
export function egressNeeds(env: ReadonlyMap<string, EnvValue>, options: { traced: boolean }): EgressNeed[] {
  const needs: EgressNeed[] = [
    { why: 'DNS', peer: { kind: 'dns' }, port: 53, protocol: 'UDP' },
    { why: 'DNS', peer: { kind: 'dns' }, port: 53, protocol: 'TCP' },
  ];
  const add = (why: string, peer: Peer, port: number) => needs.push({ why, peer, port, protocol: 'TCP' });
  for (const [name, port] of [
    ['IDENTITY_DATABASE_URL', 5432],
    ['RISK_DATABASE_URL', 5432],
    ['RISK_DATABASE_REPLICA_URL', 5432],
    ['REDIS_URL', 6379],
  ] as const) {
    if (env.has(name)) add(name, { kind: 'outside' }, urlOf(env, name)?.port ?? port);
  }
  // A Redis Cluster's seeds: the client then reaches every node the cluster names, on the seeds' port
  // (managed clusters serve every node on one); a Secret's seeds on Redis's usual port.
  const seeds = literal(env, 'REDIS_CLUSTER_NODES');
  if (env.has('REDIS_CLUSTER_NODES')) {
    const ports = seeds === undefined ? [6379] : [...new Set(seeds.split(',').map((seed) => Number(seed.trim().split(':').at(-1))))];
    for (const port of ports) add('REDIS_CLUSTER_NODES', { kind: 'outside' }, port);
  }
  for (const name of ['IDENTITY_URL', 'RISK_URL', 'IDENTITY_JWKS_URL']) {
    const url = urlOf(env, name);
    if (url === undefined) continue;
    add(name, DEPLOYABLES.some((d) => d.name === url.host) ? { kind: 'app', name: url.host } : { kind: 'outside' }, url.port);
  }
  for (const [provider, name] of [
    ['MAIL_PROVIDER', 'MAIL_HTTP_URL'],
    ['SMS_PROVIDER', 'SMS_HTTP_URL'],
  ] as const) {
    const url = urlOf(env, name);
    if (literal(env, provider) === 'http' && url !== undefined) add(name, { kind: 'outside' }, url.port);
  }
  if (options.traced) {
    const url = urlOf(env, 'OTEL_EXPORTER_OTLP_ENDPOINT');
    const namespace = url === undefined ? OTLP_COLLECTOR.namespace : /^[a-z0-9-]+\.([a-z0-9-]+)(\.svc(\..*)?)?$/.exec(url.host)?.[1];
    add('OTEL_EXPORTER_OTLP_ENDPOINT', namespace === undefined ? { kind: 'outside' } : { kind: 'namespace', name: namespace }, url?.port ?? OTLP_COLLECTOR.port);
  }
  return needs;
}

/** One egress rule as read: its destinations (`any` without `to`) and ports (`all` without `ports`). */
interface Rule {
  policy: string;
  peers: Peer[] | 'any';
  ports: Array<{ port: number | string; protocol: string }> | 'all';
}

const describe = (peer: Peer | 'any'): string =>
  peer === 'any' ? 'anywhere' : peer.kind === 'dns' ? 'the cluster DNS' : peer.kind === 'app' ? `${peer.name} pods` : peer.kind === 'namespace' ? `namespace ${peer.name}` : 'outside the cluster';

/** A `to` entry as a peer, or a reason it is not one the platform uses. */
function peerOf(to: Json): Peer | string {
  if (to.ipBlock !== undefined) return { kind: 'outside' };
  const namespace = get(to, 'namespaceSelector', 'matchLabels', 'kubernetes.io/metadata.name');
  const app = get(to, 'podSelector', 'matchLabels', 'app.kubernetes.io/name');
  if (namespace === 'kube-system' && get(to, 'podSelector', 'matchLabels', 'k8s-app') === 'kube-dns') return { kind: 'dns' };
  if (typeof namespace === 'string' && to.podSelector === undefined) return { kind: 'namespace', name: namespace };
  if (to.namespaceSelector === undefined && typeof app === 'string' && DEPLOYABLES.some((d) => d.name === app)) return { kind: 'app', name: app };
  return `${JSON.stringify(to)} is no destination a deployable needs (DNS, a platform deployable, a namespace by name, an ipBlock)`;
}

/** The port a rule's port means at `peer`: a name is looked up on the deployable's pods (`http`: its API port). */
function portAt(port: number | string, peer: Peer | 'any'): number | undefined {
  if (typeof port === 'number') return port;
  if (peer === 'any' || peer.kind !== 'app' || port !== 'http') return undefined;
  const d = DEPLOYABLES.find((x) => x.name === peer.name);
  return d === undefined ? undefined : Number(d.spec[d.portKey]?.default);
}

/** Whether a rule's destination `peer` includes the destination of a need. */
const includes = (peer: Peer | 'any', need: Peer): boolean =>
  peer === 'any' || (peer.kind === need.kind && (peer.kind === 'dns' || peer.kind === 'outside' || (peer as { name: string }).name === (need as { name: string }).name));

const selects = (selector: unknown, labels: Readonly<Record<string, string>>): boolean =>
  typeof selector === 'object' && selector !== null && get(selector, 'matchExpressions') === undefined &&
  Object.entries((get(selector, 'matchLabels') as Record<string, string> | undefined) ?? {}).every(([k, v]) => labels[k] === v);

/**
 * One line per way the egress of the pods labelled `labels` differs from `needs`: not restricted at all, a
 * need no rule allows, or a rule (destination and port) that no need asks for.
 */
export function egressProblems(where: string, labels: Readonly<Record<string, string>>, objects: readonly K8sObject[], needs: readonly EgressNeed[]): string[] {
  const policies = objects.filter((o) => o.kind === 'NetworkPolicy' && selects(get(o, 'spec', 'podSelector'), labels));
  const egress = policies.filter((p) => ((get(p, 'spec', 'policyTypes') as string[] | undefined) ?? []).includes('Egress'));
  if (egress.length === 0) return [`${where}: its egress is not restricted (no NetworkPolicy of type Egress selects its pods)`];
  const problems: string[] = [];
  const rules: Rule[] = [];
  for (const policy of egress) {
    for (const rule of (get(policy, 'spec', 'egress') as Json[] | undefined) ?? []) {
      const to = rule.to as Json[] | undefined;
      const peers: Peer[] = [];
      for (const entry of to ?? []) {
        const peer = peerOf(entry);
        if (typeof peer === 'string') problems.push(`${where}: NetworkPolicy ${policy.metadata.name} lets it reach ${peer}`);
        else peers.push(peer);
      }
      const ports = rule.ports as Json[] | undefined;
      rules.push({
        policy: policy.metadata.name,
        peers: to === undefined || to.length === 0 ? 'any' : peers,
        ports: ports === undefined || ports.length === 0 ? 'all' : ports.map((p) => ({ port: p.port as number | string, protocol: String(p.protocol ?? 'TCP') })),
      });
    }
  }
  for (const need of needs) {
    const allowed = rules.some(
      (rule) =>
        (rule.peers === 'any' ? [rule.peers] : rule.peers).some((peer) => includes(peer, need.peer) &&
          (rule.ports === 'all' || rule.ports.some((p) => p.protocol === need.protocol && portAt(p.port, need.peer.kind === 'app' ? need.peer : peer) === need.port))),
    );
    if (!allowed) problems.push(`${where}: cannot reach ${need.why} (${describe(need.peer)}, port ${need.port}/${need.protocol}): no egress rule allows it`);
  }
  for (const rule of rules) {
    if (rule.ports === 'all') {
      problems.push(`${where}: NetworkPolicy ${rule.policy} lets it reach every port of ${(rule.peers === 'any' ? ['any' as const] : rule.peers).map(describe).join(', ')}`);
      continue;
    }
    for (const peer of rule.peers === 'any' ? ['any' as const] : rule.peers) {
      for (const { port, protocol } of rule.ports) {
        const at = portAt(port, peer);
        const needed = needs.some((need) => includes(peer, need.peer) && need.protocol === protocol && need.port === at);
        if (!needed) problems.push(`${where}: NetworkPolicy ${rule.policy} lets it reach ${describe(peer)} on port ${String(port)}/${protocol}, which none of its settings needs`);
      }
    }
  }
  return problems;
}

/** Problems when something may reach the pods labelled `labels` (a one-shot Job nothing calls). */
export function closedToIngressProblems(where: string, labels: Readonly<Record<string, string>>, objects: readonly K8sObject[]): string[] {
  const policies = objects.filter(
    (o) => o.kind === 'NetworkPolicy' && selects(get(o, 'spec', 'podSelector'), labels) && ((get(o, 'spec', 'policyTypes') as string[] | undefined) ?? []).includes('Ingress'),
  );
  if (policies.length === 0) return [`${where}: its ingress is not restricted (no NetworkPolicy of type Ingress selects its pods)`];
  return policies.filter((p) => ((get(p, 'spec', 'ingress') as unknown[] | undefined) ?? []).length > 0).map((p) => `${where}: NetworkPolicy ${p.metadata.name} lets something reach it`);
}
