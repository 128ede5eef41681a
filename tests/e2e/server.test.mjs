// The static server (scripts/static-server.mjs) against hostile and careless clients: malformed
// and traversing paths, other methods, aborted downloads. Requests go out through raw sockets,
// byte for byte as written here (Node's http client and fetch would normalise `//`, `%` or `..`).
// The server runs in this process, so its open files are this process's /proc/self/fd.
//   node --test tests/e2e/server.test.mjs
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { serve } from '../../scripts/static-server.mjs';

const SECRET = 'secret-next-to-the-served-folder';
const BIG_BYTES = 8 << 20; // a model file's worth: a download takes many reads
const ANSWER_TIMEOUT_MS = 10_000;

let folder;
let server;
let port;
let big;

before(async () => {
  folder = mkdtempSync(join(tmpdir(), 'tviz-server-'));
  const dist = join(folder, 'dist');
  mkdirSync(dist);
  mkdirSync(join(folder, 'dist-secret'));
  // A sibling whose name starts with the served folder's: a prefix check without a separator
  // lets `/../dist-secret/x` through.
  writeFileSync(join(folder, 'dist-secret', 'x'), SECRET);
  writeFileSync(join(dist, 'index.html'), '<!doctype html><title>served</title>');
  big = Buffer.alloc(BIG_BYTES);
  for (let i = 0; i < big.length; i += 4) big.writeUInt32LE(i, i);
  writeFileSync(join(dist, 'big.bin'), big);
  server = await serve(dist, 0);
  port = server.address().port;
});

after(() => {
  server?.closeAllConnections?.();
  server?.close();
  rmSync(folder, { recursive: true, force: true });
});

function parse(bytes) {
  const split = bytes.indexOf('\r\n\r\n');
  assert.ok(split > 0, `not an HTTP response: ${JSON.stringify(bytes.toString('latin1').slice(0, 200))}`);
  const [statusLine, ...lines] = bytes.subarray(0, split).toString('latin1').split('\r\n');
  const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
  return { status: Number(statusLine.split(' ')[1]), headers, body: bytes.subarray(split + 4) };
}

/** Sends `method path` exactly as written and resolves to the whole answer (the server closes). */
function request(method, path) {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const chunks = [];
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no answer within ${ANSWER_TIMEOUT_MS} ms to ${method} ${path}: did the server die?`));
    }, ANSWER_TIMEOUT_MS);
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('error', (err) => { clearTimeout(timer); reject(err); });
    socket.on('end', () => {
      clearTimeout(timer);
      try {
        resolve(parse(Buffer.concat(chunks)));
      } catch (err) {
        reject(err);
      }
    });
    socket.write(`${method} ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`);
  });
}

async function assertStillServing() {
  const { status } = await request('GET', '/index.html');
  assert.equal(status, 200, 'the server no longer serves its page');
}

function openFiles() {
  return readdirSync('/proc/self/fd').length;
}

test('an address longer than the server reads (a 100,000-character ?text=) gets a page saying what to do', async () => {
  const { status, headers, body } = await request('GET', `/?text=${'a'.repeat(100_000)}`);
  assert.equal(status, 431);
  assert.match(body.toString('utf8'), /This link is too long for the server.*paste the text into its text box/s);
  assert.equal(headers['x-content-type-options'], 'nosniff');
  assert.match(headers['content-security-policy'] ?? '', /frame-ancestors 'self'/);
  await assertStillServing();
});

test('malformed percent-encodings are answered 400 and the server keeps serving', async () => {
  for (const path of ['/%E0%A4%A', '/%', '/%ZZ', '/%C0%AF']) {
    const { status } = await request('GET', path);
    assert.equal(status, 400, `GET ${path}`);
    await assertStillServing();
  }
});

test('paths that are odd but not malformed (//, ///, //[) never crash the server', async () => {
  for (const path of ['//', '///', '//[', '//index.html', '/[']) {
    const { status } = await request('GET', path);
    assert.ok(status < 500, `GET ${path}: ${status}`);
    await assertStillServing();
  }
});

test('no path reaches a file outside the served folder', async () => {
  const paths = [
    '/..%2fdist-secret%2fx', '/../dist-secret/x', '/%2e%2e/dist-secret/x', '/%2e%2e%2fdist-secret%2fx',
    '/..%5cdist-secret%5cx', '//..%2fdist-secret%2fx', '/./../dist-secret/x', '/index.html/..%2f..%2fdist-secret%2fx',
  ];
  for (const path of paths) {
    const { status, body } = await request('GET', path);
    assert.ok([400, 403, 404].includes(status), `GET ${path}: ${status}`);
    assert.ok(!body.toString('latin1').includes(SECRET), `GET ${path} served the file outside the folder`);
  }
  await assertStillServing();
});

test('methods other than GET and HEAD get 405 with Allow: GET, HEAD', async () => {
  for (const method of ['POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS']) {
    const { status, headers } = await request(method, '/index.html');
    assert.equal(status, 405, method);
    assert.equal(headers.allow, 'GET, HEAD', method);
  }
  const head = await request('HEAD', '/index.html');
  assert.equal(head.status, 200);
  assert.equal(head.body.length, 0, 'HEAD has no body');
});

test('every response carries the isolation, nosniff and Content-Security-Policy headers', async () => {
  // A file, a folder, HEAD, missing, other method, traversal, malformed: each kind of answer.
  const kinds = [['GET', '/index.html'], ['GET', '/'], ['HEAD', '/big.bin'], ['GET', '/missing.js'], ['POST', '/'], ['GET', '/../dist-secret/x'], ['GET', '/%']];
  for (const [method, path] of kinds) {
    const { status, headers } = await request(method, path);
    const what = `${method} ${path} (${status})`;
    assert.equal(headers['cross-origin-opener-policy'], 'same-origin', what);
    assert.equal(headers['cross-origin-embedder-policy'], 'require-corp', what);
    assert.equal(headers['x-content-type-options'], 'nosniff', what);
    // The page's policy on files (tests/e2e/page.test.mjs compares it with the page's <meta>);
    // error pages get the stricter default-src 'none'.
    assert.match(headers['content-security-policy'] ?? '', status === 200 ? /object-src 'none'/ : /default-src '(self|none)'/, what);
  }
});

/** Starts a download of big.bin and breaks it off once the first bytes have come. */
function abortedDownload() {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const timer = setTimeout(() => { socket.destroy(); reject(new Error('no bytes of big.bin')); }, ANSWER_TIMEOUT_MS);
    socket.once('data', () => { clearTimeout(timer); socket.destroy(); resolve(); });
    socket.on('error', (err) => { clearTimeout(timer); reject(err); });
    socket.write('GET /big.bin HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
  });
}

test('300 aborted downloads leave no open file behind', async () => {
  await assertStillServing();
  const before = openFiles();
  for (let batch = 0; batch < 15; batch += 1) {
    await Promise.all(Array.from({ length: 20 }, abortedDownload));
  }
  // Closing is asynchronous on both sides: poll until the count settles, within a bound.
  const deadline = Date.now() + 20_000;
  while (openFiles() > before + 4 && Date.now() < deadline) await delay(50);
  assert.ok(openFiles() <= before + 4, `${openFiles() - before} files still open after 300 aborted downloads`);
  await assertStillServing();
});

test('a normal GET still returns the whole file', async () => {
  const { status, headers, body } = await request('GET', '/big.bin');
  assert.equal(status, 200);
  assert.equal(Number(headers['content-length']), BIG_BYTES);
  assert.ok(body.equals(big), 'the bytes differ from the file');
});
