// A static file server for the built page (dist/), bound to 127.0.0.1 only. The page needs
// nothing but its own files: this is all the "server" there is. It sends the two headers that
// make the page cross-origin isolated (for the helper thread); any static server will do
// without them, with one thread.
//   node scripts/static-server.mjs [DIR] [PORT]
import { createServer } from 'node:http';
import { createReadStream, statSync } from 'node:fs';
import { extname, join, normalize, resolve } from 'node:path';

const root = resolve(process.argv[2] ?? 'dist');
const port = Number(process.argv[3] ?? 8080);
const types = {
  '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8', '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8', '.wasm': 'application/wasm', '.json': 'application/json; charset=utf-8',
  '.safetensors': 'application/octet-stream', '.svg': 'image/svg+xml', '.png': 'image/png',
  '.woff2': 'font/woff2', '.woff': 'font/woff', '.ttf': 'font/ttf', '.txt': 'text/plain; charset=utf-8',
};

export function serve(dir = root, listenPort = port) {
  const server = createServer((req, res) => {
    const path = decodeURIComponent(new URL(req.url, 'http://localhost').pathname);
    let file = normalize(join(dir, path));
    if (!file.startsWith(dir)) { res.writeHead(403).end(); return; }
    try {
      if (statSync(file).isDirectory()) file = join(file, 'index.html');
      const size = statSync(file).size;
      res.writeHead(200, {
        'content-type': types[extname(file)] ?? 'application/octet-stream', 'content-length': size, 'cache-control': 'no-cache',
        // Cross-origin isolation: lets the page share memory with its helper worker (two
        // threads per forward pass). Served without these headers, the page computes alone.
        'cross-origin-opener-policy': 'same-origin', 'cross-origin-embedder-policy': 'require-corp',
      });
      createReadStream(file, { highWaterMark: 1 << 20 }).pipe(res); // 1 MiB reads: the model file is large
    } catch {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
    }
  });
  return new Promise((ok) => server.listen(listenPort, '127.0.0.1', () => ok(server)));
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const server = await serve();
  console.log(`transformer-viz: serving ${root} at http://127.0.0.1:${server.address().port}/ (Ctrl-C to stop)`);
}
