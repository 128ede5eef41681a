// A static file server for the built page (dist/), bound to 127.0.0.1 only. The page needs
// nothing but its own files: this is all the "server" there is.
//   node scripts/static-server.mjs [DIR] [PORT]
// The files are served by the Express team's serve-static (paths, ranges, caching, closing the
// file of an aborted download); errors (400 malformed path, 403 a path out of DIR, 404) are
// answered by their finalhandler. What is ours is the headers every response carries.
import { createServer } from 'node:http';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import finalhandler from 'finalhandler';
import serveStatic from 'serve-static';

// The page's Content-Security-Policy, the same as the <meta> in www/index.html (a test compares
// them): its own files only; WebAssembly; its worker threads; KaTeX's inline style attributes;
// data: (the favicon) and blob: (exports) images. The wasm is started by www/start-wasm.js, not
// by an inline script (scripts/assemble-page.mjs), so script-src needs no hash or nonce.
export const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self' 'wasm-unsafe-eval'",
  "worker-src 'self' blob:", // wasm-bindgen-rayon starts its workers from a blob: copy of its script
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data: blob:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
].join('; ');

// Only the page's own origin may show it in a frame. A <meta> policy cannot say this (browsers
// ignore frame-ancestors there), so it is added to the served header alone.
export const FRAME_ANCESTORS = "frame-ancestors 'self'";

const HEADERS = {
  // Cross-origin isolation: lets the page share its WebAssembly memory with worker threads (its
  // threaded build, www/js/threads.js). Served without these headers, the page computes alone.
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Embedder-Policy': 'require-corp',
  'X-Content-Type-Options': 'nosniff',
  // Error pages get finalhandler's stricter "default-src 'none'" instead.
  'Content-Security-Policy': `${CONTENT_SECURITY_POLICY}; ${FRAME_ANCESTORS}`,
  'X-Frame-Options': 'SAMEORIGIN', // the same, for browsers that predate frame-ancestors
};

const TOO_LONG_PAGE = `<!doctype html>
<html lang="en"><meta charset="utf-8"><title>transformer-viz: this link is too long</title>
<body style="font-family: sans-serif; max-width: 40em; margin: 3em auto">
<h1>This link is too long for the server</h1>
<p>Its address holds more than the server reads (a long text written into <code>?text=</code>).
Open <a href="/">the page</a> and paste the text into its text box: the links it makes keep the
text after the <code>#</code>, which is never sent to a server, so they work at any length.</p>
</body></html>
`;

/** Serves `dir` on 127.0.0.1:`port` (0: any free port); resolves to the listening http.Server. */
export function serve(dir = 'dist', port = 8080) {
  const files = serveStatic(resolve(dir), {
    fallthrough: false, // other methods than GET and HEAD: 405 with `Allow: GET, HEAD`
    index: ['index.html'],
    maxAge: 0, // revalidate every time: the page's own js/ and models/ names carry no hash
  });
  const server = createServer((req, res) => {
    for (const [name, value] of Object.entries(HEADERS)) res.setHeader(name, value);
    // 'production': error pages say "Not Found", not a stack trace with the server's paths.
    files(req, res, finalhandler(req, res, { env: 'production' }));
  });
  // A request Node refuses before any handler sees it. An address longer than Node's header
  // limit (an old `?text=` link of a long text) gets a page saying what to do, with the same
  // headers as every answer, rather than a bare "431"; anything else malformed a plain 400.
  server.on('clientError', (err, socket) => {
    if (!socket.writable) return;
    const tooLong = err.code === 'HPE_HEADER_OVERFLOW';
    const body = tooLong ? TOO_LONG_PAGE : 'Bad request\n';
    const head = [
      tooLong ? 'HTTP/1.1 431 Request Header Fields Too Large' : 'HTTP/1.1 400 Bad Request',
      `Content-Type: ${tooLong ? 'text/html' : 'text/plain'}; charset=utf-8`,
      `Content-Length: ${Buffer.byteLength(body)}`,
      'Connection: close',
      ...Object.entries(HEADERS).map(([name, value]) => `${name}: ${value}`),
    ];
    socket.end(`${head.join('\r\n')}\r\n\r\n${body}`);
  });
  return new Promise((ok, fail) => {
    server.once('error', fail);
    server.listen(port, '127.0.0.1', () => ok(server));
  });
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const dir = process.argv[2] ?? 'dist';
  const server = await serve(dir, Number(process.argv[3] ?? 8080));
  console.log(`transformer-viz: serving ${resolve(dir)} at http://127.0.0.1:${server.address().port}/ (Ctrl-C to stop)`);
}
