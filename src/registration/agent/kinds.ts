// The built-in Kubernetes kinds the registration agent reads and writes besides the OCM ones, typed
// as the plain JSON ResourceClient hands back (only the fields the agent uses). OCM kinds come from
// src/api; nothing here talks to an apiserver.
import type { KubeObject } from '../../kube/index.ts';

export {
  certificateSigningRequestResource,
  customResourceDefinitionResource,
  namespaceResource,
  nodeResource,
  secretResource,
} from '../../kube/index.ts';

export interface Secret extends KubeObject {
  type?: string;
  /** base64 values */
  data?: Record<string, string>;
}

export interface Node extends KubeObject {
  spec?: { unschedulable?: boolean };
  status?: { capacity?: Record<string, string>; allocatable?: Record<string, string> };
}

export interface CsrCondition {
  type: 'Approved' | 'Denied' | 'Failed' | string;
  status: string;
  reason?: string;
  message?: string;
}

export interface CertificateSigningRequest extends KubeObject {
  spec: {
    /** base64 PEM of the PKCS#10 request */
    request: string;
    signerName: string;
    usages: string[];
    expirationSeconds?: number;
    username?: string;
  };
  status?: {
    conditions?: CsrCondition[];
    /** base64 PEM, set by the signer once approved */
    certificate?: string;
  };
}

export interface CustomResourceDefinition extends KubeObject {
  status?: { conditions?: Array<{ type: string; status: string }> };
}

/** The signer of client certificates the hub kube-apiserver trusts (OCM's registration signer). */
export const kubeApiserverClientSigner = 'kubernetes.io/kube-apiserver-client';

/** Key usages OCM's agent asks for; all allowed by the kube-apiserver-client signer. */
export const clientCertificateUsages = ['digital signature', 'key encipherment', 'client auth'];

export const b64 = (text: string): string => Buffer.from(text, 'utf8').toString('base64');
export const unb64 = (data: string | undefined): string =>
  data ? Buffer.from(data, 'base64').toString('utf8') : '';
