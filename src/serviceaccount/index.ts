// Public surface of src/serviceaccount: the ManagedServiceAccount agent (managed side), the hub
// controllers and CLI helpers, the hub RBAC the agent needs, and the token/duration rules both
// sides share. Import from here.
export {
  checkKubeconfigServerUrl,
  kubeconfigSecretKey,
  type ServiceAccountAgent,
  type ServiceAccountAgentOptions,
  ServiceAccountNotManagedError,
  startServiceAccountAgent,
} from './agent/index.ts';
export { formatAge, formatGoDuration, parseGoDuration } from './duration.ts';
export {
  type CreateManagedServiceAccountOptions,
  type CreateManagedServiceAccountResult,
  createManagedServiceAccount,
  listManagedServiceAccounts,
  type ManagedServiceAccountRow,
  type ServiceAccountHub,
  type ServiceAccountHubOptions,
  startServiceAccountHub,
} from './hub/index.ts';
export {
  serviceAccountAgentHubRbac,
  serviceAccountAgentHubRules,
  serviceAccountAgentRoleName,
} from './rbac.ts';
export {
  decodeTokenClaims,
  parseAudiences,
  serviceAccountUsername,
  type TokenClaims,
  TokenRequestUnsupportedError,
  tokenAudiencesAnnotation,
  tokenExpirationSeconds,
} from './token.ts';
