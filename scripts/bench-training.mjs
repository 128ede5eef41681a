// Benchmark of the page's Training section (run scripts/build-page.sh first), in headless
// Debian Chromium, beside the native trainer on the same presets:
//   - for each preset (PRESETS=previous-token,induction by default): press Train and follow the
//     run for its budget (BUDGET_S, default 90 s for previous-token, 360 s for the others):
//     the seconds and step at which the best previous-token and induction scores first pass
//     0.5, the copy loss (first copy -> second copy) then and at the end, tokens a second
//     (median and spread of the worker's chunks), the worker's WebAssembly memory, and the
//     tab's memory (its renderer processes' proportional set size) before Train and at the end;
//   - the native trainer (`transformer-viz train-page --preset P`, one thread and the cores'
//     threads) on the same preset for as many steps as the page reached: its tokens a second;
//   - keystroke to every chart of the inspected model at 32 tokens (KEYSTROKES, default 20,
//     KEY_GAP_MS apart),
//     while the induction preset trains and, as the peer, in the same page before Train.
// DIST=<folder> serves another build of the page (default: dist/), for a peer build's figures;
// QUERY=<link parameters> opens the page with them (as `threads=1`: the plain trainer on one
// thread, the threaded trainer's peer in the same build).
// Prints a table and writes tests/artifacts/bench-training.json.
import { mkdirSync, writeFileSync, readdirSync, readFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { serve } from './static-server.mjs';
import { launchChromium } from './browser.mjs';
import { stats } from './stats.mjs';

const ROOT = new URL('..', import.meta.url).pathname;
const PRESETS = (process.env.PRESETS ?? 'previous-token,induction').split(',');
const KEYSTROKES = Number(process.env.KEYSTROKES ?? 20);
// Milliseconds between a keystroke's charts and the next keystroke (KEY_GAP_MS, default 0: a
// burst of typing). Above the worker's QUIET_MS (train-worker.js) each keystroke finds the run
// training, a step perhaps under way: the worst case.
const KEY_GAP_MS = Number(process.env.KEY_GAP_MS ?? 0);
const budgetOf = (preset) => Number(process.env.BUDGET_S ?? (preset === 'previous-token' ? 90 : 360));
const SENTENCE = 'The cat sat on the mat because it was tired and the';

async function openSection(browser, base) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  await page.goto(base);
  await page.waitForFunction(() => window.__tviz?.firstSettledAt !== undefined, null, { timeout: 120000 });
  await page.locator('#training-section').scrollIntoViewIfNeeded();
  await page.waitForFunction(() => window.__tviz.training?.formReady, null, { timeout: 120000 });
  return { context, page };
}

/** The tab's memory as the operating system counts it (Linux): the proportional set size of
 * Chromium's renderer processes, where the page, its workers and their WebAssembly memories
 * live (one tab open; a spare renderer, if any, is counted too), in MB. */
function tabMemoryMB() {
  let kb = 0;
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      if (!cmdline.includes('chromium') || !cmdline.includes('--type=renderer')) continue;
      kb += Number(/^Pss:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'))?.[1] ?? 0);
    } catch {
      // a process that ended meanwhile
    }
  }
  return kb / 1024;
}

/** Keystrokes in the text box: input to every chart drawn (ms), as scripts/bench-page.mjs times them. */
async function keystrokes(page) {
  await page.locator('#input-section').scrollIntoViewIfNeeded();
  await page.fill('#text', SENTENCE);
  await page.waitForFunction(() => window.__tvizSettled());
  await page.evaluate(() => { window.__tviz.settledLatencies = []; });
  await page.focus('#text');
  for (let i = 0; i < KEYSTROKES; i += 1) {
    if (KEY_GAP_MS > 0) await page.waitForTimeout(KEY_GAP_MS);
    const before = await page.evaluate(() => window.__tviz.settledLatencies.length);
    await page.keyboard.press(i % 2 === 0 ? 'Backspace' : SENTENCE.at(-1));
    await page.waitForFunction((n) => window.__tviz.settledLatencies.length > n, before);
  }
  return stats(await page.evaluate(() => window.__tviz.settledLatencies));
}

/** The native trainer's tokens a second on `preset` over `steps` steps, with `threads` threads. */
function native(preset, steps, threads) {
  // The batch cut into one part a thread, as the page's threaded trainer cuts it.
  const out = execFileSync('cargo', ['run', '--quiet', '--release', '--bin', 'transformer-viz', '--', 'train-page', '--preset', preset, '--steps', String(steps), '--threads', String(threads)],
    { cwd: ROOT, encoding: 'utf8', env: { ...process.env, RAYON_NUM_THREADS: String(threads) }, maxBuffer: 1 << 26 });
  const lines = out.trim().split('\n');
  const speeds = lines.map((l) => Number(/([\d.]+) tokens\/s/.exec(l)?.[1])).filter(Number.isFinite);
  return { threads, tokensPerSecond: speeds.at(-1), last: lines.at(-1) };
}

const server = await serve(process.env.DIST ?? join(ROOT, 'dist'), 0);
const base = `http://127.0.0.1:${server.address().port}/${process.env.QUERY ? `?${process.env.QUERY}` : ''}`;
const browser = await launchChromium();
const results = { date: new Date().toISOString(), presets: {}, keystrokes: {} };
try {
  for (const preset of PRESETS) {
    const { context, page } = await openSection(browser, base);
    if (preset === 'induction') results.keystrokes.idle = await keystrokes(page);
    await page.locator('#training-section').scrollIntoViewIfNeeded();
    await page.selectOption('#train-preset', preset);
    await page.waitForFunction(() => window.__tviz.training?.formReady);
    await page.evaluate(() => { window.__tviz.trainingSpeeds = []; window.__tviz.trainingEvaluations = []; });
    const tabBefore = tabMemoryMB();
    await page.click('#train-start');
    await page.waitForFunction(() => window.__tviz.training?.status === 'running', null, { timeout: 120000 });
    const budget = budgetOf(preset);
    if (preset === 'induction') results.keystrokes.training = await keystrokes(page);
    // Followed until the preset's head formed (and 20 s more, to see it hold), the run ended
    // or the budget is spent.
    const key = preset === 'previous-token' ? 'previous' : 'induction';
    await page.waitForFunction(([s, k]) => {
      const evals = window.__tviz.trainingEvaluations;
      const last = evals.at(-1);
      const formed = evals.find((e) => e[k] > 0.5);
      return window.__tviz.training.status === 'finished' || (last && (last.seconds > s || (formed && last.seconds > formed.seconds + 20)));
    }, [budget, key], { timeout: (budget + 120) * 1000, polling: 1000 });
    const tabTraining = tabMemoryMB();
    const [evaluations, speeds, training] = await page.evaluate(() => [window.__tviz.trainingEvaluations, window.__tviz.trainingSpeeds, window.__tviz.training]);
    const first = (key) => evaluations.find((e) => e[key] > 0.5) ?? null;
    const last = evaluations.at(-1);
    results.presets[preset] = {
      budgetSeconds: budget,
      previousPassed: first('previous'),
      inductionPassed: first('induction'),
      last,
      tokensPerSecond: stats(speeds.slice(3)), // the first chunks run before the browser has compiled the trainer's hot code
      workerMemoryMB: training.memoryBytes / 1e6,
      threads: training.threads,
      tabMemoryMB: { beforeTrain: tabBefore, training: tabTraining },
      native: [native(preset, last.step, 1), native(preset, last.step, 2)],
    };
    await context.close();
  }
} finally {
  await browser.close();
  server.close();
}
mkdirSync(join(ROOT, 'tests/artifacts'), { recursive: true });
writeFileSync(join(ROOT, 'tests/artifacts/bench-training.json'), JSON.stringify(results, null, 2));
const at = (e) => (e ? `step ${e.step} at ${e.seconds.toFixed(1)} s (copy loss ${e.copy[0].toFixed(2)} -> ${e.copy[1].toFixed(2)})` : 'not within the budget');
for (const [preset, r] of Object.entries(results.presets)) {
  console.log(`${preset} (budget ${r.budgetSeconds} s):`);
  console.log(`  previous-token head > 0.5: ${at(r.previousPassed)}; induction head > 0.5: ${at(r.inductionPassed)}`);
  console.log(`  last: step ${r.last.step} at ${r.last.seconds.toFixed(1)} s, best previous-token ${r.last.previous.toFixed(2)}, induction ${r.last.induction.toFixed(2)}, copy loss ${r.last.copy[0].toFixed(2)} -> ${r.last.copy[1].toFixed(2)}`);
  const t = r.tokensPerSecond;
  console.log(`  page, ${r.threads} thread${r.threads === 1 ? '' : 's'}: ${Math.round(t.median)} tokens/s (p10 ${Math.round(t.p10)}, p90 ${Math.round(t.p90)}, ${t.count} chunks); worker memory ${r.workerMemoryMB.toFixed(0)} MB; the tab ${r.tabMemoryMB.beforeTrain.toFixed(0)} MB before Train, ${r.tabMemoryMB.training.toFixed(0)} MB training`);
  for (const n of r.native) console.log(`  native, ${n.threads} thread${n.threads === 1 ? '' : 's'}: ${Math.round(n.tokensPerSecond)} tokens/s`);
}
for (const [when, s] of Object.entries(results.keystrokes)) {
  console.log(`keystroke to every chart at ${SENTENCE.split(' ').length} words, ${when === 'training' ? 'while the induction preset trains' : 'before Train (peer)'}: median ${s.median.toFixed(1)} ms, p95 ${s.p95.toFixed(1)} ms (${s.count} keystrokes)`);
}
