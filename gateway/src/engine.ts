// The gateway's parts that tools outside it measure on their own (bench/groups/observability.ts, bench/groups/hardening.ts):
// `@platform/gateway/engine`. The running gateway is index.ts; nothing here starts anything.
export { ADMIT_CHECKED_SCRIPT, type AdmissionStore, clientKeyTag, createAdmissionStore, idempotencyRedisKey, nonceKey, rateKey } from './admission/admission.ts';
export { loadApiDocument } from './docs/load-api-document.ts';
export { operationTable, pathOf } from './proxy/operation-table.ts';
export { upstreamRoutes } from './proxy/routes.ts';
export { rateLimitHeaders } from './rate-limit/rate-limit-headers.ts';
