// The V8 flags tether's processes start with in the image (its entrypoint), and the benchmarks'
// tether processes with them, so the benchmark measures what the image runs. Not in the `tether`
// command's shebang: that may meet an older Node (the system's), which refuses a V8 flag it lacks.
//
// Why: a byte relay allocates one ArrayBuffer per read (TLS records, HTTP/2 DATA) and little JS
// heap besides. V8 counts those buffers as external memory and, by default, starts a full
// mark-compact each time 64 MiB more of it piled up since the last one: `node --trace-gc` on the hub
// during `bench tunnel --only=frontend-bulk-1` showed 162 mark-compacts against 10 scavenges, and
// perf put concurrent marking and sweeping on V8's worker threads at about 40 % of the hub's CPU.
// `--external-memory-accounted-in-global-limit` (V8's newer accounting) weighs external memory
// within the heap's global limit instead. Measured in the same minutes (hub CPU per GiB, one
// tunnel): 2.75–2.86 → 2.48 s; after the benchmark's 10 000 idle connections 3.09 → 2.21 s.
// Tried and dropped: a 1 MiB young generation (`--max-semi-space-size=1`) cut both the hub and the
// agent to about 2 s/GiB on a fresh process (one tunnel 45 % faster), but with 10 000 idle
// connections held the hub rose to 5.2 s/GiB; 2 MiB made the agent slower, 4 and 8 MiB changed nothing.
//
// `--initial-heap-size=128` (MB): with the accounting above, a process whose heap is still small
// (a freshly started proxy-server or agent, ~17 MB live) has a small global limit, and the relay's
// dead buffers reach it between two scavenges (at 300 MB/s a scavenge comes every ~0.3 s, i.e. every
// ~90 MB of buffers): `--trace-gc` still counted 49 mark-compacts against 14 scavenges per GiB-scale
// run. A process holding many connections has a larger heap, hence a larger limit, and ran fast
// already (after the benchmark's 10 000 idle connections: 395 MB/s against 292–311 fresh). Starting
// with the limit such a heap would have gives a fresh process the same: 0 mark-compacts and 45
// scavenges of ≈ 0.3 ms, one tunnel 292–311 → 446–478 MB/s, hub 2.5–2.6 → 1.65–1.76 s/GiB,
// agent 3.0–3.2 → 2.0–2.1 s/GiB. It reserves nothing: idle RSS (`bench footprint --quick
// --no-inspector`) and peak RSS during the bulk run stayed within their spread; the idle trim
// (src/cli/idle-memory.ts) still collects an idle process's garbage. 64 gained less (386–430 MB/s).
// The limit holds only until the process's first full collection, which recomputes it from the live
// heap; from then on the relay collector (src/tunnel/relay-gc.ts) keeps the relays' dead buffers
// from reaching it.
export const tetherNodeFlags: readonly string[] = [
  '--external-memory-accounted-in-global-limit',
  '--initial-heap-size=128',
];
