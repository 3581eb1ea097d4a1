// Discovery and OpenAPI of cluster.core.oam.dev/v1alpha1: what the hub aggregator merges into the
// hub's own discovery (`kubectl api-resources`) and OpenAPI (`kubectl explain clustergateways`).
import { createHash } from 'node:crypto';
import { gatewayGroup, gatewayGroupVersion, gatewayVersion } from './types.ts';

const groupVersion = { groupVersion: gatewayGroupVersion, version: gatewayVersion };

export const apiGroup = {
  name: gatewayGroup,
  versions: [groupVersion],
  preferredVersion: groupVersion,
};

export const apiGroupList = { kind: 'APIGroupList', apiVersion: 'v1', groups: [apiGroup] };

export const apiGroupDocument = { kind: 'APIGroup', apiVersion: 'v1', ...apiGroup };

export const apiResourceList = {
  kind: 'APIResourceList',
  apiVersion: 'v1',
  groupVersion: gatewayGroupVersion,
  resources: [
    {
      name: 'clustergateways',
      singularName: 'clustergateway',
      namespaced: false,
      kind: 'ClusterGateway',
      verbs: ['get', 'list', 'watch'],
    },
    {
      name: 'clustergateways/health',
      singularName: '',
      namespaced: false,
      kind: 'ClusterGateway',
      verbs: ['get'],
    },
    {
      name: 'clustergateways/tunnel',
      singularName: '',
      namespaced: false,
      kind: 'ClusterGatewayTunnel',
      verbs: ['get'],
    },
    {
      name: 'clustergateways/proxy',
      singularName: '',
      namespaced: false,
      kind: 'ClusterGatewayProxyOptions',
      verbs: ['create', 'delete', 'get', 'patch', 'update'],
    },
  ],
};

const gvk = [{ group: gatewayGroup, version: gatewayVersion, kind: 'ClusterGateway' }];
const listGvk = [{ group: gatewayGroup, version: gatewayVersion, kind: 'ClusterGatewayList' }];
const gatewayName = 'dev.oam.core.cluster.v1alpha1.ClusterGateway';
const listName = 'dev.oam.core.cluster.v1alpha1.ClusterGatewayList';
const objectMetaName = 'io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta';
const listMetaName = 'io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta';

const str = (description: string) => ({ type: 'string', description });

/** Schemas keyed by their Kubernetes OpenAPI names; `ref` makes a v2 or v3 reference. */
function schemas(ref: (name: string) => string): Record<string, unknown> {
  const refTo = (name: string) => ({ allOf: [{ $ref: ref(name) }], default: {} });
  return {
    [gatewayName]: {
      type: 'object',
      description:
        'ClusterGateway is the entry to one managed cluster: its proxy subresource forwards Kubernetes API ' +
        'requests to that cluster, its health subresource says whether the cluster answers. Derived by the ' +
        'gateway from ManagedClusters and credential Secrets; read-only.',
      properties: {
        apiVersion: str('APIVersion defines the versioned schema of this representation of an object.'),
        kind: str('Kind is a string value representing the REST resource this object represents.'),
        metadata: refTo(objectMetaName),
        spec: {
          type: 'object',
          description: 'How the gateway reaches the cluster.',
          properties: {
            provider: str('Who provides the cluster (empty for Open Cluster Management clusters).'),
            access: {
              type: 'object',
              description: 'Endpoint and credential used for the cluster.',
              properties: {
                endpoint: {
                  type: 'object',
                  description: 'Where requests go.',
                  properties: {
                    type: str('ClusterProxy (through the reverse tunnel) or Const (a fixed address).'),
                    const: {
                      type: 'object',
                      description: 'The fixed address, for type Const.',
                      properties: { address: str('https URL of the apiserver.') },
                    },
                  },
                },
                credential: {
                  type: 'object',
                  description: 'How the gateway authenticates to the cluster.',
                  properties: { type: str('ServiceAccountToken or X509Certificate.') },
                },
              },
            },
          },
        },
        status: {
          type: 'object',
          description: 'Observed state of the cluster.',
          properties: {
            healthy: {
              type: 'boolean',
              description: 'The cluster apiserver answers /healthz through the gateway.',
            },
            healthyReason: str('Why the cluster is not healthy (NoTunnel, ConnectionFailed, …).'),
          },
        },
      },
      'x-kubernetes-group-version-kind': gvk,
    },
    [listName]: {
      type: 'object',
      description: 'A list of ClusterGateways.',
      required: ['items'],
      properties: {
        apiVersion: str('APIVersion defines the versioned schema of this representation of an object.'),
        kind: str('Kind is a string value representing the REST resource this object represents.'),
        metadata: refTo(listMetaName),
        items: { type: 'array', items: refTo(gatewayName) },
      },
      'x-kubernetes-group-version-kind': listGvk,
    },
    [objectMetaName]: {
      type: 'object',
      description: 'ObjectMeta is metadata that all persisted resources must have.',
      properties: {
        name: str('Name must be unique within a namespace.'),
        uid: str('UID is the unique in time and space value for this object.'),
        resourceVersion: str('An opaque value that represents the internal version of this object.'),
        creationTimestamp: {
          type: 'string',
          format: 'date-time',
          description: 'When this object was created.',
        },
        labels: {
          type: 'object',
          additionalProperties: { type: 'string', default: '' },
          description: 'Labels.',
        },
        annotations: {
          type: 'object',
          additionalProperties: { type: 'string', default: '' },
          description: 'Annotations.',
        },
      },
    },
    [listMetaName]: {
      type: 'object',
      description: 'ListMeta describes metadata that synthetic resources must have.',
      properties: {
        resourceVersion: str('String that identifies the server internal version of this list.'),
        continue: str('Set when more results are available.'),
      },
    },
  };
}

function operations(ref: (name: string) => string, v3: boolean): Record<string, unknown> {
  const response = (name: string, description: string) =>
    v3
      ? { description, content: { 'application/json': { schema: { $ref: ref(name) } } } }
      : { description, schema: { $ref: ref(name) } };
  const base = `/apis/${gatewayGroup}/${gatewayVersion}/clustergateways`;
  const action = (verb: string, kind: string, op: string, name: string) => ({
    get: {
      description: `${verb} ClusterGateway`,
      operationId: `${op}ClusterCoreOamDevV1alpha1ClusterGateway`,
      tags: ['clusterCoreOamDev_v1alpha1'],
      responses: { '200': response(name, 'OK'), '401': { description: 'Unauthorized' } },
      'x-kubernetes-action': verb,
      'x-kubernetes-group-version-kind': { group: gatewayGroup, version: gatewayVersion, kind },
    },
  });
  const nameParam = v3
    ? {
        name: 'name',
        in: 'path',
        required: true,
        description: 'name of the ClusterGateway',
        schema: { type: 'string' },
      }
    : { name: 'name', in: 'path', required: true, description: 'name of the ClusterGateway', type: 'string' };
  return {
    [base]: action('list', 'ClusterGateway', 'list', listName),
    [`${base}/{name}`]: { ...action('get', 'ClusterGateway', 'read', gatewayName), parameters: [nameParam] },
  };
}

function withEtag(doc: unknown): { body: string; etag: string } {
  const body = JSON.stringify(doc);
  return { body, etag: `"${createHash('sha512').update(body).digest('hex').toUpperCase()}"` };
}

export const openApiV2 = withEtag({
  swagger: '2.0',
  info: { title: 'tether gateway', version: gatewayVersion },
  paths: operations((n) => `#/definitions/${n}`, false),
  definitions: schemas((n) => `#/definitions/${n}`),
});

export const openApiV3GroupVersionPath = `apis/${gatewayGroup}/${gatewayVersion}`;

export const openApiV3GroupVersion = withEtag({
  openapi: '3.0.0',
  info: { title: 'tether gateway', version: gatewayVersion },
  paths: operations((n) => `#/components/schemas/${n}`, true),
  components: { schemas: schemas((n) => `#/components/schemas/${n}`) },
});

export const openApiV3Root = withEtag({
  paths: {
    [openApiV3GroupVersionPath]: {
      serverRelativeURL: `/openapi/v3/${openApiV3GroupVersionPath}?hash=${openApiV3GroupVersion.etag.replace(/"/g, '')}`,
    },
  },
});
