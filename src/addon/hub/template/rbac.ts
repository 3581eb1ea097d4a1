// What the hub's template add-ons (controller.ts) need beyond the add-on manager's own rules: pure
// data for the ClusterRole and hub-namespace Role src/install renders for `tether hub`.
//   - read AddOnTemplates;
//   - approve and sign the CSRs of the custom signers templates name (any signer name: the names
//     are data; a CSR is approved and signed only for a registration of the add-on it is labelled
//     with, src/addon/hub/registration/csr-approval.ts);
//   - in `open-cluster-management-addon-signers` only (agent.ts signingCaNamespace; never the hub
//     namespace, whose Secrets hold the hub's keys): read a custom signer's CA Secret. RoleBindings to the templates' roles use the controllers' existing bind rights.
import { addonApiGroup } from '../../../api/addon.ts';
import { addOnTemplateResource } from '../../../api/addon-template.ts';

export interface AddonTemplateHubRule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
}

export function addonTemplateHubRules(): AddonTemplateHubRule[] {
  return [
    {
      apiGroups: [addonApiGroup],
      resources: [addOnTemplateResource.plural],
      verbs: ['get', 'list', 'watch'],
    },
    { apiGroups: ['certificates.k8s.io'], resources: ['signers'], verbs: ['approve', 'sign'] },
    {
      apiGroups: ['certificates.k8s.io'],
      resources: ['certificatesigningrequests/status'],
      verbs: ['update'],
    },
  ];
}

/** In signingCaNamespace: the custom signers' CA Secrets. */
export function addonTemplateHubNamespaceRules(): AddonTemplateHubRule[] {
  return [{ apiGroups: [''], resources: ['secrets'], verbs: ['get'] }];
}
