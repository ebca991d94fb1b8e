import { isIP } from 'node:net';
import { EnvHttpProxyAgent, Pool, type Agent, type Dispatcher } from 'undici';
import type { Config } from '../config.js';
import { BlockedAddressError, isPublicAddress, publicOnlyLookup } from './address-guard.js';

// Deliveries through an outbound proxy (HTTP_PROXY, HTTPS_PROXY, NO_PROXY). undici's
// EnvHttpProxyAgent picks the route of each request: the proxy of its scheme, or straight to the
// receiver for a host NO_PROXY names. It is given the configured values, so it never reads the
// environment itself.
//
// Every request through a proxy goes in a CONNECT tunnel, plain http as well as https: the
// tunnel is the one place where leadhooks names the address the proxy connects to. With private
// targets refused, the webhook's host is resolved here, through the same guard as a direct
// connection, and the proxy is asked for the address that passed (CONNECT 93.184.216.34:443), not
// for the name: a proxy resolving the name again could be sent elsewhere (DNS rebinding). TLS
// still runs end to end with the receiver, for the webhook's own name. The proxy itself is the
// operator's configuration, trusted wherever it runs (loopback included).

export type ProxyConfig = Pick<Config, 'httpProxy' | 'httpsProxy' | 'noProxy'>;

/** A failure of the proxy, not of the receiver: its message says so, and names no proxy address. */
export class ProxyError extends Error {
  readonly code = 'EPROXY';
}

/** A connection error met on the way to the proxy; the sender describes the cause. */
export class ProxyConnectionFailed extends Error {
  readonly code = 'EPROXYCONNECT';
  constructor(override readonly cause: NodeJS.ErrnoException) {
    super(cause.message);
  }
}

/** The address to tunnel to: the host itself if it is a public address, else its first public one. */
function publicAddress(hostname: string): Promise<string> {
  if (isIP(hostname)) {
    return isPublicAddress(hostname) ? Promise.resolve(hostname) : Promise.reject(new BlockedAddressError(hostname, hostname));
  }
  return new Promise((resolve, reject) => {
    publicOnlyLookup(hostname, {}, (error, address) => (error ? reject(error) : resolve(address as string)));
  });
}

/** `host:port` as a CONNECT request names it; an IPv6 address in brackets. */
function authority(host: string, port: string): string {
  return isIP(host) === 6 ? `[${host}]:${port}` : `${host}:${port}`;
}

/**
 * The connection pool to one proxy, as ProxyAgent's `clientFactory`: ProxyAgent opens each tunnel
 * with its `connect({ path: 'host:port', ... })`, which is where the target is judged (and, with
 * the guard on, replaced by the address judged) and where the proxy's failures get their message.
 */
function tunnelsThrough(guarded: boolean, timeoutMs: number) {
  return (origin: URL, options: object): Dispatcher => {
    // A tunnel the proxy opens later than an attempt's whole time is of use to no attempt: past
    // that, the pool stops waiting and the next attempt asks again.
    const pool = new Pool(origin, { ...options, headersTimeout: timeoutMs });
    // Bound before it is replaced below: the tunnel opens through the pool's own connect.
    const connect: (params: Dispatcher.ConnectOptions) => Promise<Dispatcher.ConnectData> = pool.connect.bind(pool);
    const tunnel = async (params: Dispatcher.ConnectOptions): Promise<Dispatcher.ConnectData> => {
      const match = /^\[?(.*?)\]?:(\d+)$/.exec(params.path);
      if (!match) throw new ProxyError(`cannot tunnel to ${params.path}`);
      const target = guarded ? authority(await publicAddress(match[1]!), match[2]!) : params.path;
      let opened: Dispatcher.ConnectData;
      try {
        opened = await connect({ ...params, path: target, headers: { ...params.headers, host: target } });
      } catch (error) {
        throw new ProxyConnectionFailed(error as NodeJS.ErrnoException);
      }
      const status = opened.statusCode;
      if (status !== 200) {
        opened.socket.on('error', () => {}).destroy();
        const reason = status === 407 ? 'the proxy refused its credentials' : status >= 500 ? 'the proxy could not reach the receiver' : 'the proxy refused the connection';
        throw new ProxyError(`${reason} (status ${status})`);
      }
      return opened;
    };
    // ProxyAgent only calls the promise form.
    pool.connect = tunnel;
    return pool;
  };
}

const agents = new Map<string, Dispatcher>();

/**
 * The dispatcher of deliveries when a proxy is configured, one per configuration, address policy
 * and attempt timeout, made once; undefined when none is (deliveries go direct). `direct` is how
 * a NO_PROXY host is reached: the connection options of the direct agent of the same policy.
 */
export function proxyDispatcher(
  proxy: ProxyConfig,
  allowPrivateTargets: boolean,
  timeoutMs: number,
  direct: Agent.Options,
): Dispatcher | undefined {
  if (proxy.httpProxy === null && proxy.httpsProxy === null) return undefined;
  const key = JSON.stringify([proxy.httpProxy, proxy.httpsProxy, proxy.noProxy, allowPrivateTargets, timeoutMs]);
  let agent = agents.get(key);
  if (agent === undefined) {
    agent = new EnvHttpProxyAgent({
      ...direct,
      // Given as '' when unset, so that undici does not read the environment instead.
      httpProxy: proxy.httpProxy ?? '',
      // Unset, https goes through the HTTP_PROXY too, as undici has it.
      httpsProxy: proxy.httpsProxy ?? '',
      noProxy: proxy.noProxy,
      proxyTunnel: true,
      clientFactory: tunnelsThrough(!allowPrivateTargets, timeoutMs),
      // The attempt's own timer is its limit, through the proxy too: a connection to the proxy
      // (or a TLS handshake in the tunnel) slower than a whole attempt is given up.
      connectTimeout: timeoutMs,
    });
    agents.set(key, agent);
  }
  return agent;
}
