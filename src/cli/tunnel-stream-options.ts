// proxy-server flags for how the hub treats tunnel streams of agents that go quiet: how long an
// agent may stay silent (no PING answer, no byte) before its streams are reset and dials to it
// fail (TETHER_AGENT_UNRESPONSIVE), and how long a half-closed stream may sit without traffic.
// Defaults are defaultTunnelLimits. Also the PING keepalive flags both ends share.
import { type Command, Option } from 'commander';
import { InvalidArgumentError } from '../errors.ts';
import { defaultTunnelLimits, type TunnelLimits } from '../tunnel/protocol.ts';
import { positiveInt } from './options.ts';

export interface TunnelStreamFlags {
  unresponsiveAfter: number;
  halfOpenTimeout: number;
}

function halfOpenTimeoutOption(): Option {
  return new Option(
    '--half-open-timeout <ms>',
    'reset a tunnel stream that one side has ended after this long without traffic the other way (0 = never)',
  )
    .env('TETHER_HALF_OPEN_TIMEOUT')
    .default(defaultTunnelLimits.halfOpenTimeoutMs)
    .argParser(positiveInt('--half-open-timeout', 86_400_000));
}

/** proxy-server: adds --unresponsive-after and --half-open-timeout (both in ms). */
export function tunnelStreamOptions(cmd: Command): Command {
  return cmd
    .addOption(
      new Option(
        '--unresponsive-after <ms>',
        'an agent that neither answers a PING nor sends a byte this long is unresponsive: its open streams ' +
          'are reset, dials to it fail (TETHER_AGENT_UNRESPONSIVE) and go to another agent until it answers',
      )
        .env('TETHER_UNRESPONSIVE_AFTER')
        .default(defaultTunnelLimits.unresponsiveAfterMs)
        .argParser(positiveInt('--unresponsive-after', 600_000)),
    )
    .addOption(halfOpenTimeoutOption());
}

/** proxy-agent: adds --half-open-timeout (ms); the agent resets its half-open streams too. */
export function agentStreamOptions(cmd: Command): Command {
  return cmd.addOption(halfOpenTimeoutOption());
}

export function tunnelStreamLimits(
  flags: TunnelStreamFlags,
): Pick<TunnelLimits, 'unresponsiveAfterMs' | 'halfOpenTimeoutMs'> {
  if (flags.unresponsiveAfter < 100)
    throw new InvalidArgumentError('--unresponsive-after must be at least 100 ms');
  return { unresponsiveAfterMs: flags.unresponsiveAfter, halfOpenTimeoutMs: flags.halfOpenTimeout };
}

/** PING keepalive flags shared by both ends: a silent peer is dropped after interval + timeout. */
export function keepaliveOptions(cmd: Command): Command {
  return cmd
    .addOption(
      new Option('--ping-interval <ms>', 'send an HTTP/2 PING on each tunnel this often')
        .env('TETHER_PING_INTERVAL')
        .default(10_000)
        .argParser(positiveInt('--ping-interval', 600_000)),
    )
    .addOption(
      new Option('--ping-timeout <ms>', 'drop a tunnel whose peer does not answer a PING within this time')
        .env('TETHER_PING_TIMEOUT')
        .default(20_000)
        .argParser(positiveInt('--ping-timeout', 600_000)),
    );
}

export function keepaliveLimits(flags: { pingInterval: number; pingTimeout: number }): {
  pingIntervalMs: number;
  pingTimeoutMs: number;
} {
  if (flags.pingInterval < 100 || flags.pingTimeout < 100)
    throw new InvalidArgumentError('--ping-interval and --ping-timeout must be at least 100 ms');
  return { pingIntervalMs: flags.pingInterval, pingTimeoutMs: flags.pingTimeout };
}
