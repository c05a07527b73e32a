// Type checks of Kubernetes objects against the API's OpenAPI schemas, as compiled by kubernetes-models.
import { Deployment } from 'kubernetes-models/apps/v1/Deployment';
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler';
import { Job } from 'kubernetes-models/batch/v1/Job';
import { Ingress } from 'kubernetes-models/networking.k8s.io/v1/Ingress';
import { NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1/NetworkPolicy';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1/PodDisruptionBudget';
import { ConfigMap } from 'kubernetes-models/v1/ConfigMap';
import { Service } from 'kubernetes-models/v1/Service';
import type { K8sObject } from './kustomize.ts';

type ModelClass = new (data: never) => { validate(): void };

// The kinds deploy/k8s may contain. A Secret is not among them: secrets are created outside the repository.
const MODELS = new Map<string, ModelClass>([
  ['apps/v1 Deployment', Deployment],
  ['batch/v1 Job', Job],
  ['v1 Service', Service],
  ['v1 ConfigMap', ConfigMap],
  ['autoscaling/v2 HorizontalPodAutoscaler', HorizontalPodAutoscaler],
  ['policy/v1 PodDisruptionBudget', PodDisruptionBudget],
  ['networking.k8s.io/v1 NetworkPolicy', NetworkPolicy],
  ['networking.k8s.io/v1 Ingress', Ingress],
]);

/** One line per object that is not a valid object of its kind, or of a kind deploy/k8s may not contain. */
export function schemaProblems(objects: readonly K8sObject[]): string[] {
  const problems: string[] = [];
  for (const object of objects) {
    const kind = `${object.apiVersion} ${object.kind}`;
    const name = `${kind} ${object.metadata?.name ?? '(no name)'}`;
    const Model = MODELS.get(kind);
    if (Model === undefined) {
      problems.push(`${name}: kind not allowed in deploy/k8s (allowed: ${[...MODELS.keys()].join(', ')})`);
      continue;
    }
    try {
      new Model(structuredClone(object) as never).validate();
    } catch (err) {
      problems.push(`${name}: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
  return problems;
}
