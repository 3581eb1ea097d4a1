// Shapes shared by the local control-plane code, `tether up` and the e2e test environment.

/** What a started control plane exposes to its users (all paths are files on this machine). */
export interface ControlPlaneInfo {
  /** hub, cluster1, … */
  name: string;
  /** https://127.0.0.1:<port> */
  apiserverUrl: string;
  /** kubeconfig for a cluster-admin (system:masters) client certificate */
  kubeconfigPath: string;
  /** the cluster CA (signs serving and client certificates, and CSRs through the KCM) */
  caCertPath: string;
  caKeyPath: string;
  /** the front-proxy CA the aggregator's client certificate is issued by */
  frontProxyCaCertPath: string;
  /** directory holding this control plane's PKI, data and logs */
  dir: string;
}

/** How to reach the tunnel of a local environment (all paths are files on this machine). */
export interface TunnelInfo {
  squidUrl: string;
  squidAccessLogPath: string;
  proxyServerAddress: string;
  connectFrontendUrl: string;
  proxyClientCertPath: string;
  proxyClientKeyPath: string;
  hubCaPath: string;
}
