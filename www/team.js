// The page's half of `model::team`: the page (member 0) and a Web Worker (member 1) each run
// the model and swap their halves of every dense layer through one SharedArrayBuffer.
// Imported by the wasm module (web.rs); the same file serves both sides, each with its own
// state. Layout of the buffer: a header of two Int32 counters (how many exchanges member 0 and
// member 1 have published), then two slots per member (exchange k uses slot k % 2, so a member
// can write its next half while the partner still reads the last one).

const HEADER_BYTES = 64;
const PARTNER_TIMEOUT_MS = 2000; // an exchange normally takes well under a millisecond

let member = -1;
let counters = null; // Int32Array(2)
let slots = null; // [[Float32Array, Float32Array], [Float32Array, Float32Array]] by member, slot
let published = 0; // exchanges this member has published
let worker = null; // member 0: the helper, told to start a pass by `team_begin`

/** Bytes of shared memory for halves of at most `maxFloats` floats. */
export function team_buffer_bytes(maxFloats) {
  return HEADER_BYTES + 4 * 4 * maxFloats;
}

export function team_init(buffer, who, helper) {
  member = who;
  worker = helper ?? null;
  counters = new Int32Array(buffer, 0, 2);
  const floats = (buffer.byteLength - HEADER_BYTES) / 16;
  const slot = (i) => new Float32Array(buffer, HEADER_BYTES + i * 4 * floats, floats);
  slots = [[slot(0), slot(1)], [slot(2), slot(3)]];
  published = Atomics.load(counters, who);
}

/**
 * Member 0: tells the helper to run the same pass on the same tokens (a causal model's pass
 * takes its first `reused` tokens from the helper's KV cache, as the page's does).
 */
export function team_begin(ids, reused) {
  worker.postMessage({ ids: ids.slice(), reused }); // a copy: `ids` views the wasm memory
}

/** Publishes this member's half and waits for the partner's; false if it never comes. */
export function team_exchange(mine, theirs) {
  const k = published;
  const out = slots[member][k % 2];
  if (mine.length > out.length || theirs.length > out.length) return false;
  out.set(mine);
  published = k + 1;
  Atomics.store(counters, member, published);
  Atomics.notify(counters, member);
  const other = 1 - member;
  const deadline = performance.now() + PARTNER_TIMEOUT_MS;
  while (Atomics.load(counters, other) < published) {
    if (member === 1) {
      // A worker may sleep until the page publishes.
      Atomics.wait(counters, other, Atomics.load(counters, other), 50);
    }
    // The page may not sleep: it polls (the wait is a few microseconds to milliseconds).
    if (performance.now() > deadline) return false;
  }
  theirs.set(slots[other][k % 2].subarray(0, theirs.length));
  return true;
}
