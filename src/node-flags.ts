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
export const tetherNodeFlags: readonly string[] = ['--external-memory-accounted-in-global-limit'];
