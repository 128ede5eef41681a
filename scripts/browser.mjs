// Launches Debian's Chromium for the browser tests and benchmarks (no browser download is
// possible here). The flags keep it off the (closed) network and enable WebGPU.
import { chromium } from 'playwright-core';
import { existsSync } from 'node:fs';

export const CHROMIUM = ['/usr/lib/chromium/chromium', '/usr/bin/chromium'].find((p) => existsSync(p));

export function launchChromium() {
  if (!CHROMIUM) throw new Error('Chromium is not installed: run scripts/test.sh, which installs Debian\'s chromium');
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', '--enable-unsafe-webgpu', '--disable-gpu-sandbox',
      // performance.measureUserAgentSpecificMemory() (the memory test with MEASURE_TAB=1)
      // answers sooner: without it Chromium waits for its next garbage collection (60 s once).
      '--enable-blink-features=ForceEagerMeasureMemory',
    ],
  });
}

/** Opens `url` in `page`; a link to a large model the browser has not cached makes the page
 * ask before it downloads (model-picker.js): the benchmarks answer Download, as a student
 * would, and time from the navigation as before. */
export async function gotoAccepting(page, url) {
  await page.goto(url);
  await page.waitForFunction(() => window.__tviz?.picker === 'offer' || window.__tviz?.firstViewAt !== undefined || window.__tviz?.failed, null, { timeout: 120_000 });
  if (await page.evaluate(() => window.__tviz.picker === 'offer')) await page.click('#model-download');
}
