// Checks of a built overlay (what `kubectl apply -k` would apply) against the code and the platform's
// rules: environment per deployable, ports, probes, drain time, resources, secrets only by reference,
// cluster-internal services behind a NetworkPolicy, the risk service's autoscaler.
import type { AppEnv } from '@platform/service-kit';
import {
  DEPLOYABLES,
  type Deployable,
  type EnvValue,
  configProblems,
  imageEnv,
  portOf,
  resolvedValue,
  scriptSpec,
  sourceOf,
} from './deployables.ts';
import { type K8sObject, containersOf, podSpec } from './kustomize.ts';
import { closedToIngressProblems, egressNeeds, egressProblems } from './network-egress.ts';

type Json = Record<string, unknown>;

const get = (value: unknown, ...path: string[]): unknown =>
  path.reduce<unknown>((at, key) => (typeof at === 'object' && at !== null ? (at as Json)[key] : undefined), value);

/** Every variable a container gets, and where from; references that cannot resolve are problems. */
export function containerEnv(container: Json, objects: readonly K8sObject[], base: ReadonlyMap<string, EnvValue>, problems: string[], where: string): Map<string, EnvValue> {
  const env = new Map(base);
  const configMap = (name: unknown) => objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name === name)?.data as Record<string, string> | undefined;
  for (const from of (container.envFrom as Json[] | undefined) ?? []) {
    if (from.secretRef !== undefined) problems.push(`${where}: envFrom secretRef hides which variables a Secret sets; name each with secretKeyRef`);
    const data = configMap(get(from, 'configMapRef', 'name'));
    if (from.configMapRef !== undefined && data === undefined) problems.push(`${where}: no ConfigMap ${String(get(from, 'configMapRef', 'name'))}`);
    for (const [k, v] of Object.entries(data ?? {})) env.set(k, { literal: v });
  }
  for (const entry of (container.env as Json[] | undefined) ?? []) {
    const name = String(entry.name);
    const secret = get(entry, 'valueFrom', 'secretKeyRef') as Json | undefined;
    const configKey = get(entry, 'valueFrom', 'configMapKeyRef') as Json | undefined;
    if (entry.value !== undefined && entry.valueFrom !== undefined) problems.push(`${where}: ${name} has both value and valueFrom`);
    if (typeof entry.value === 'string') env.set(name, { literal: entry.value });
    else if (secret !== undefined) env.set(name, { secret: `${String(secret.name)}/${String(secret.key)}` });
    else if (configKey !== undefined) {
      const value = configMap(configKey.name)?.[String(configKey.key)];
      if (value === undefined) problems.push(`${where}: ${name} refers to ConfigMap ${String(configKey.name)} key ${String(configKey.key)}, which is not there`);
      else env.set(name, { literal: value });
    } else problems.push(`${where}: ${name} has no value the check understands`);
  }
  return env;
}

const selects = (selector: unknown, labels: unknown) =>
  typeof selector === 'object' && selector !== null && Object.entries(selector).every(([k, v]) => (labels as Json | undefined)?.[k] === v);

function workloadProblems(d: Deployable, appEnv: AppEnv, objects: readonly K8sObject[], root: string): { problems: string[]; env?: Map<string, EnvValue> } {
  const problems: string[] = [];
  const deployment = objects.find((o) => o.kind === 'Deployment' && o.metadata.name === d.name);
  if (deployment === undefined) return { problems: [`${appEnv}: no Deployment ${d.name}`] };
  const where = `${appEnv} Deployment ${d.name}`;
  const pod = podSpec(deployment)!;
  const template = get(deployment, 'spec', 'template', 'metadata', 'labels');
  if (!selects(get(deployment, 'spec', 'selector', 'matchLabels'), template)) problems.push(`${where}: its selector does not match its pods`);
  const container = ((pod.containers as Json[] | undefined) ?? []).find((c) => c.name === d.name);
  if (container === undefined) return { problems: [...problems, `${where}: no container ${d.name}`] };

  const image = String(container.image);
  const tag = /(?:^|\/)identity-risk-platform\/([a-z-]+):([\w.-]+)$/.exec(image);
  if (tag?.[1] !== d.name || tag[2] === 'latest') problems.push(`${where}: image ${image} is not identity-risk-platform/${d.name} at a fixed tag`);
  else if ((appEnv === 'local') !== (tag[2] === 'local')) problems.push(`${where}: image tag ${tag[2]}: \`local\` is for the local overlay only`);

  const env = containerEnv(container, objects, imageEnv(root, d), problems, where);
  const appEnvValue = env.get('APP_ENV');
  if (appEnvValue === undefined || !('literal' in appEnvValue) || appEnvValue.literal !== appEnv) problems.push(`${where}: APP_ENV must be ${appEnv}`);
  problems.push(...configProblems(where, d.spec, env, d.refine));
  for (const [name, value] of env) {
    if ('secret' in value && !value.secret.startsWith(`${d.name}-secrets/`)) problems.push(`${where}: ${name} comes from ${value.secret}; ${d.name} reads only ${d.name}-secrets`);
  }

  const port = portOf(d, env);
  const http = ((container.ports as Json[] | undefined) ?? []).find((p) => p.name === 'http');
  if (http?.containerPort !== port) problems.push(`${where}: container port http must be ${port} (${d.portKey}), got ${String(http?.containerPort)}`);
  // A management port (metrics and health only) is declared as `management` with the port its variable names.
  const management = ((container.ports as Json[] | undefined) ?? []).find((p) => p.name === 'management');
  if (d.managementPortKey !== undefined && management?.containerPort !== portOf(d, env, d.managementPortKey)) {
    problems.push(`${where}: container port management must be ${portOf(d, env, d.managementPortKey)} (${d.managementPortKey}), got ${String(management?.containerPort)}`);
  }
  // A metrics port (/metrics only) is declared as `metrics`, with the port its variable sets: Prometheus reaches that one only.
  const metricsPort = ((container.ports as Json[] | undefined) ?? []).find((p) => p.name === 'metrics');
  if (d.metricsPortKey !== undefined) {
    const configured = portOf(d, env, d.metricsPortKey);
    if (configured === 0) problems.push(`${where}: ${d.metricsPortKey} must be set, so that Prometheus scrapes a port without the API`);
    else if (metricsPort?.containerPort !== configured) problems.push(`${where}: container port metrics must be ${configured} (${d.metricsPortKey}), got ${String(metricsPort?.containerPort)}`);
  }
  const probePorts = new Set<unknown>(['http', port, ...(management === undefined ? [] : ['management', management.containerPort])]);
  for (const [probe, path] of [
    ['readinessProbe', '/health/ready'],
    ['livenessProbe', '/health/live'],
  ] as const) {
    const httpGet = get(container, probe, 'httpGet') as Json | undefined;
    if (httpGet?.path !== path || !probePorts.has(httpGet.port)) problems.push(`${where}: ${probe} must GET ${path} on the http or management port`);
  }
  if (get(container, 'resources', 'requests', 'cpu') === undefined || get(container, 'resources', 'requests', 'memory') === undefined) {
    problems.push(`${where}: needs cpu and memory requests`);
  }
  if (get(container, 'resources', 'limits', 'memory') === undefined) problems.push(`${where}: needs a memory limit`);
  // SIGTERM comes after preStop; the process then drains for DRAIN_TIMEOUT_MS and closes its pools.
  const preStop = get(container, 'lifecycle', 'preStop', 'exec', 'command') as string[] | undefined;
  const preStopS = preStop?.[0] === 'sleep' ? Number(preStop[1]) : 0;
  const drainMs = Number(resolvedValue(d.spec, env, 'DRAIN_TIMEOUT_MS'));
  const graceS = Number(pod.terminationGracePeriodSeconds ?? 30);
  if (graceS * 1000 < preStopS * 1000 + drainMs + 5000) problems.push(`${where}: terminationGracePeriodSeconds ${graceS} leaves no time past preStop ${preStopS} s + DRAIN_TIMEOUT_MS ${drainMs}`);
  if (get(pod, 'securityContext', 'runAsNonRoot') !== true) problems.push(`${where}: pods must run as non-root`);
  if (get(container, 'securityContext', 'readOnlyRootFilesystem') !== true || get(container, 'securityContext', 'allowPrivilegeEscalation') !== false) {
    problems.push(`${where}: the container must have a read-only root filesystem and no privilege escalation`);
  }

  // The Service: same port, selecting exactly these pods; identity and risk stay inside the cluster.
  const service = objects.find((o) => o.kind === 'Service' && o.metadata.name === d.name);
  const servicePort = ((get(service, 'spec', 'ports') as Json[] | undefined) ?? [])[0];
  if (service === undefined || servicePort?.port !== port || (servicePort.targetPort !== 'http' && servicePort.targetPort !== port)) {
    problems.push(`${appEnv} Service ${d.name}: must expose port ${port} to the pods' http port`);
  } else if (!selects(get(service, 'spec', 'selector'), template)) problems.push(`${appEnv} Service ${d.name}: its selector does not match the pods`);
  const serviceMetrics = ((get(service, 'spec', 'ports') as Json[] | undefined) ?? []).find((p) => p.name === 'metrics');
  if (d.metricsPortKey !== undefined && serviceMetrics?.targetPort !== 'metrics') problems.push(`${appEnv} Service ${d.name}: must expose the pods' metrics port as \`metrics\` (its ServiceMonitor scrapes it)`);
  if (d.name !== 'gateway' && (get(service, 'spec', 'type') ?? 'ClusterIP') !== 'ClusterIP') problems.push(`${appEnv} Service ${d.name}: must be cluster-internal (ClusterIP)`);

  // Out of the pod: what its settings name and nothing else (NetworkPolicy egress).
  problems.push(...egressProblems(where, (template ?? {}) as Record<string, string>, objects, egressNeeds(env, { traced: true })));

  // Migration (and seed) Jobs: the same image, an existing script, only the variables that script reads;
  // nothing reaches them, and they reach DNS and what their scripts read.
  for (const job of objects.filter((o) => o.kind === 'Job' && o.metadata.labels?.['app.kubernetes.io/name'] === d.name)) {
    const jobLabels = (get(job, 'spec', 'template', 'metadata', 'labels') ?? {}) as Record<string, string>;
    const jobNeeds = containersOf(job).flatMap((step) => egressNeeds(containerEnv(step, objects, new Map(), [], ''), { traced: false }));
    problems.push(...closedToIngressProblems(`${appEnv} Job ${job.metadata.name}`, jobLabels, objects), ...egressProblems(`${appEnv} Job ${job.metadata.name}`, jobLabels, objects, jobNeeds));
    for (const step of containersOf(job)) {
      const jobWhere = `${appEnv} Job ${job.metadata.name} ${String(step.name)}`;
      const [node, script = ''] = (step.command as string[] | undefined) ?? [];
      if (step.image !== image) problems.push(`${jobWhere}: must run the deployment's image ${image}`);
      if (node !== 'node' || d.scripts[script] === undefined || sourceOf(d, script) === undefined) {
        problems.push(`${jobWhere}: command is not one of ${d.name}'s scripts`);
        continue;
      }
      const stepEnv = containerEnv(step, objects, new Map(), problems, jobWhere);
      problems.push(...configProblems(jobWhere, scriptSpec(d, script), stepEnv));
      const stepAppEnv = stepEnv.get('APP_ENV');
      if (stepAppEnv === undefined || !('literal' in stepAppEnv) || stepAppEnv.literal !== appEnv) problems.push(`${jobWhere}: APP_ENV must be ${appEnv}`);
    }
  }
  return { problems, env };
}

/**
 * The gateway's policy: the ingress controller reaches its public port only, the monitoring namespace
 * its management port only (CONTRACT.md part 10: /metrics is never on the public port).
 */
function gatewayPolicyProblems(where: string, rules: readonly Json[]): string[] {
  const problems: string[] = [];
  const portsOf = (rule: Json) => ((rule.ports as Json[] | undefined) ?? []).map((p) => p.port);
  for (const rule of rules) {
    for (const peer of (rule.from as Json[] | undefined) ?? [{}]) {
      const namespace = get(peer, 'namespaceSelector', 'matchLabels', 'kubernetes.io/metadata.name');
      const expected = namespace === 'ingress-nginx' ? 'http' : namespace === 'monitoring' ? 'management' : undefined;
      if (peer.podSelector !== undefined || expected === undefined) problems.push(`${where}: lets in ${JSON.stringify(peer)}; only ingress-nginx and monitoring may`);
      else if (portsOf(rule).length !== 1 || portsOf(rule)[0] !== expected) problems.push(`${where}: ${namespace} may reach the ${expected} port only, got ${JSON.stringify(portsOf(rule))}`);
    }
  }
  return problems;
}

/** Who may reach a pod: every `from` peer must be the gateway, an allowed caller, or the monitoring namespace. */
function networkPolicyProblems(d: Deployable, appEnv: AppEnv, objects: readonly K8sObject[]): string[] {
  const allowed: Record<string, string[]> = { identity: ['gateway', 'risk'], risk: ['gateway'] };
  const callers = allowed[d.name];
  const policy = objects.find((o) => o.kind === 'NetworkPolicy' && get(o, 'spec', 'podSelector', 'matchLabels', 'app.kubernetes.io/name') === d.name);
  const where = `${appEnv} NetworkPolicy for ${d.name}`;
  if (policy === undefined || !(get(policy, 'spec', 'policyTypes') as string[] | undefined)?.includes('Ingress')) return [`${where}: missing, or not for Ingress`];
  if (callers === undefined) return gatewayPolicyProblems(where, (get(policy, 'spec', 'ingress') as Json[] | undefined) ?? []);
  const problems: string[] = [];
  for (const rule of (get(policy, 'spec', 'ingress') as Json[] | undefined) ?? []) {
    const peers = rule.from as Json[] | undefined;
    const ports = ((rule.ports as Json[] | undefined) ?? []).map((p) => p.port);
    if (peers === undefined || peers.length === 0) problems.push(`${where}: a rule without \`from\` lets every pod in`);
    for (const peer of peers ?? []) {
      const app = get(peer, 'podSelector', 'matchLabels', 'app.kubernetes.io/name');
      const namespace = get(peer, 'namespaceSelector', 'matchLabels', 'kubernetes.io/metadata.name');
      const caller = peer.namespaceSelector === undefined && callers.includes(String(app));
      const monitoring = peer.podSelector === undefined && namespace === 'monitoring';
      if (!caller && !monitoring) problems.push(`${where}: lets in ${JSON.stringify(peer)}; only ${callers.join(' and ')} (and monitoring) may`);
      // The callers reach the API port, Prometheus the metrics port: neither the other's.
      const expected = caller ? 'http' : 'metrics';
      if ((caller || monitoring) && (ports.length !== 1 || ports[0] !== expected)) {
        problems.push(`${where}: ${caller ? String(app) : 'monitoring'} may reach the ${expected} port only, got ${JSON.stringify(ports)}`);
      }
    }
  }
  return problems;
}

/**
 * One line per way a built overlay breaks the rules, for the deployables it contains. `hosts` are the
 * environment's {base_url} and {risk_base_url} hosts, when it has public ones.
 */
export function overlayProblems(appEnv: AppEnv, objects: readonly K8sObject[], root: string, hosts?: readonly string[]): string[] {
  const problems: string[] = [];
  const present = DEPLOYABLES.filter((d) => objects.some((o) => o.kind === 'Deployment' && o.metadata.name === d.name));
  const envs = new Map<string, Map<string, EnvValue>>();
  for (const d of present) {
    const result = workloadProblems(d, appEnv, objects, root);
    problems.push(...result.problems, ...networkPolicyProblems(d, appEnv, objects));
    if (result.env) envs.set(d.name, result.env);
    const budget = objects.find((o) => o.kind === 'PodDisruptionBudget' && get(o, 'spec', 'selector', 'matchLabels', 'app.kubernetes.io/name') === d.name);
    if (d.name === 'risk' && budget === undefined) problems.push(`${appEnv}: the risk service needs a PodDisruptionBudget`);
  }

  // The risk service scales on its own: an autoscaler owns its replica count.
  if (present.some((d) => d.name === 'risk')) {
    const hpa = objects.find((o) => o.kind === 'HorizontalPodAutoscaler' && get(o, 'spec', 'scaleTargetRef', 'name') === 'risk');
    const min = Number(get(hpa, 'spec', 'minReplicas') ?? 1);
    const max = Number(get(hpa, 'spec', 'maxReplicas'));
    if (hpa === undefined || !(max >= min && min >= 1)) problems.push(`${appEnv}: the risk service needs a HorizontalPodAutoscaler with 1 ≤ min ≤ max`);
    const risk = objects.find((o) => o.kind === 'Deployment' && o.metadata.name === 'risk');
    if (get(risk, 'spec', 'replicas') !== undefined) problems.push(`${appEnv}: Deployment risk must leave replicas to its autoscaler`);
  }

  // Upstream and key URLs name a Service of the platform, on the port its deployable listens on.
  for (const [name, env] of envs) {
    for (const key of ['IDENTITY_URL', 'RISK_URL', 'IDENTITY_JWKS_URL']) {
      const value = env.get(key);
      if (value === undefined || !('literal' in value)) continue;
      const url = new URL(value.literal);
      const target = DEPLOYABLES.find((d) => d.name === url.hostname);
      if (target === undefined || Number(url.port) !== Number(target.spec[target.portKey]?.default)) {
        problems.push(`${appEnv} ${name}: ${key}=${value.literal} does not name a platform Service on its port`);
      }
    }
  }
  // The deployables of one environment share the token blacklist and the token rules.
  for (const key of ['REDIS_KEY_PREFIX', 'TOKEN_ISSUER', 'JWT_AUDIENCE']) {
    const values = new Set([...envs].map(([name, env]) => JSON.stringify(resolvedValue(DEPLOYABLES.find((d) => d.name === name)!.spec, env, key))));
    if (values.size > 1) problems.push(`${appEnv}: ${key} differs between the deployables: ${[...values].join(', ')}`);
  }

  // Only the gateway is published, for the environment's public hosts.
  for (const ingress of objects.filter((o) => o.kind === 'Ingress')) {
    for (const rule of (get(ingress, 'spec', 'rules') as Json[] | undefined) ?? []) {
      for (const path of (get(rule, 'http', 'paths') as Json[] | undefined) ?? []) {
        if (get(path, 'backend', 'service', 'name') !== 'gateway' || get(path, 'backend', 'service', 'port', 'name') !== 'http') {
          problems.push(`${appEnv} Ingress ${ingress.metadata.name}: ${String(rule.host)} must lead to the gateway's http port only`);
        }
      }
    }
    const ruleHosts = ((get(ingress, 'spec', 'rules') as Json[] | undefined) ?? []).map((r) => String(r.host)).sort();
    if (hosts !== undefined && JSON.stringify(ruleHosts) !== JSON.stringify([...hosts].sort())) problems.push(`${appEnv} Ingress: hosts ${ruleHosts.join(', ')} are not ${hosts.join(', ')}`);
  }
  if (present.some((d) => d.name === 'gateway') && !objects.some((o) => o.kind === 'Ingress')) problems.push(`${appEnv}: the gateway needs an Ingress`);
  // Every token names the gateway's public origin as `iss`: the host of one of the environment's Ingress rules (CONTRACT.md part 16).
  const issuer = envs.get('gateway')?.get('TOKEN_ISSUER');
  if (hosts !== undefined && issuer !== undefined) {
    const host = 'literal' in issuer ? URL.parse(issuer.literal)?.hostname : undefined;
    if (host === undefined || !hosts.includes(host)) problems.push(`${appEnv}: TOKEN_ISSUER must be the origin of one of the gateway's public hosts (${hosts.join(', ')})`);
  }
  return problems;
}
