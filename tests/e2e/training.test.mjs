// The Training section: a tiny model trained in the page's worker learns (its loss falls, the
// heads' timeline is drawn with a line for each head), pauses, opens in the inspector's views,
// resumes, exports files the CLI loads; bad settings are named beside their controls and start
// nothing. And the page's trainer (dist/train/, in Node) computes the same loss and gradients
// as the native trainer from the same seed and batch.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, mkdtempSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { usePage, openPage as open, drawn, ROOT } from './helpers.mjs';

const env = usePage();
const openPage = (url, options) => open(env, url, options);

/** The native CLI: the test command's build (`TVIZ_CLI`), else cargo's quick profile. */
function cli(args) {
  const [command, prefix] = process.env.TVIZ_CLI
    ? [process.env.TVIZ_CLI, []]
    : ['cargo', ['run', '--quiet', '--profile', 'quick', '--bin', 'transformer-viz', '--']];
  return execFileSync(command, [...prefix, ...args], {
    cwd: ROOT,
    maxBuffer: 1 << 28,
    encoding: 'utf8',
  });
}

/** The page's trainer, loaded in Node from the page's build. */
async function pageTrainer() {
  const dist = process.env.TVIZ_DIST ?? join(ROOT, 'dist');
  const glue = await import(join(dist, 'train/transformer_viz.js'));
  await glue.default({ module_or_path: readFileSync(join(dist, 'train/transformer_viz_bg.wasm')) });
  return glue;
}

/** Sets the form to `settings` (control id -> value) as a student types them. */
async function fill(page, settings) {
  for (const [id, value] of Object.entries(settings)) {
    if (typeof value === 'boolean') await page.setChecked(`#${id}`, value);
    else if (await page.$eval(`#${id}`, (e) => e.tagName === 'SELECT')) await page.selectOption(`#${id}`, value);
    else await page.fill(`#${id}`, value);
  }
}

const training = (page) => page.evaluate(() => window.__tviz.training);
const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;

test('one step of the page trainer gives the native trainer\'s loss and gradients within 1e-4', async () => {
  const glue = await pageTrainer();
  const cases = [
    glue.training_preset('previous-token'),
    // Post-LN, no positions, two layers, stories and repeated runs: every other path of the step.
    { ...glue.training_preset('induction'), pre_ln: false, positions: false, seed: 7 },
  ];
  // And with each step's batch cut into two parts, as the threaded trainer cuts it on two
  // threads (the plain build computes the parts one after the other, the same numbers).
  for (const [settings, threads] of [...cases.map((c) => [c, 1]), [cases[1], 2]]) {
    const run = new glue.TrainingRun(settings, undefined, threads);
    const ours = run.gradients();
    run.free();
    const native = JSON.parse(cli(['train-page', '--settings', JSON.stringify(settings), '--gradients', '--threads', String(threads)]));
    assert.deepEqual(ours.inputs, native.inputs, 'the same batch');
    assert.ok(Math.abs(ours.loss - native.loss) <= 1e-4 * native.loss, `loss ${ours.loss} against ${native.loss}`);
    // Loops, not Math.max(...values): a wide model's gradients overflow the call stack.
    const largestOf = (values) => values.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
    const largest = largestOf(Object.values(native.gradients).map(largestOf));
    assert.deepEqual(Object.keys(ours.gradients).sort(), Object.keys(native.gradients).sort());
    for (const [name, theirs] of Object.entries(native.gradients)) {
      const mine = ours.gradients[name];
      assert.equal(mine.length, theirs.length, name);
      // Within 1e-4 of the tensor's largest entry; a tensor whose gradient is zero in exact
      // arithmetic (the key bias: the softmax ignores a shift shared by a whole row) holds only
      // rounding, which is compared with the largest gradient of all instead.
      const scale = Math.max(largestOf(theirs), 1e-3 * largest);
      const worst = theirs.reduce((m, v, i) => Math.max(m, Math.abs(v - mine[i])), 0);
      assert.ok(worst <= 1e-4 * scale, `${name}: off by ${worst} at a scale of ${scale}`);
    }
  }
});

test('bad settings are named beside their controls and start nothing', async () => {
  const { page, problems } = await openPage(env.base);
  await page.locator('#training-section').scrollIntoViewIfNeeded();
  await page.waitForFunction(() => window.__tviz.training?.formReady);
  const cases = [
    [{ 'train-layers': '0' }, 'train-layers-message', /Layers must be from 1 to 6 \(it is 0\)/],
    [{ 'train-layers': '1', 'train-heads': '4', 'train-width': '30' }, 'train-width-message', /must divide evenly among the 4 heads/],
    [{ 'train-width': '64', 'train-context': '1000000' }, 'train-context-message', /The context must be from 16 to 256 \(it is 1000000\)/],
    [{ 'train-context': '64', 'train-rate': 'NaN' }, 'train-rate-message', /A number such as 0\.003/],
  ];
  for (const [settings, message, words] of cases) {
    await fill(page, settings);
    await page.click('#train-start');
    await page.waitForFunction((id) => !document.getElementById(id).hidden, message);
    assert.match(await page.textContent(`#${message}`), words);
    assert.equal((await training(page)).status, 'idle', 'nothing started');
  }
  assert.equal(await page.isDisabled('#train-open'), true);
  assert.deepEqual(problems, []);
});

test('a tiny model learns in the page, pauses, opens in the inspector, resumes and exports what the CLI loads', async () => {
  const { page, problems } = await openPage(env.base);
  await page.locator('#training-section').scrollIntoViewIfNeeded();
  // The preset's settings arrive from the trainer once the section is in view.
  await page.waitForFunction(() => window.__tviz.training?.formReady);
  await fill(page, {
    'train-task': 'mixed', 'train-layers': '1', 'train-heads': '2', 'train-width': '32', 'train-context': '32',
    'train-batch': '8', 'train-steps': '3000', 'train-rate': '0.003', 'train-seed': '3',
  });
  assert.equal(await page.inputValue('#train-preset'), 'custom', 'a changed setting is the student\'s own');
  await page.click('#train-start');
  await page.waitForFunction(() => window.__tviz.training?.evaluations >= 3 && window.__tviz.training.losses >= 60);
  const timeline = await drawn(page, 'training-timeline', (d) => d.plotted?.series?.length === 2);
  assert.deepEqual(timeline.plotted.series.map((s) => s.label).sort(), ['layer 0 head 0', 'layer 0 head 1']);
  assert.match(timeline.plotted.title, /previous-token score/);
  const loss = await drawn(page, 'training-loss', (d) => d.plotted?.series?.length === 3);
  assert.deepEqual(loss.plotted.series.map((s) => s.label), ['training loss', 'held-out stories', 'second copy of a repeated run']);
  const losses = loss.plotted.series[0].points.map(([, l]) => l);
  assert.ok(mean(losses.slice(-10)) < mean(losses.slice(0, 10)) - 0.3, `the loss falls: ${losses.slice(0, 3)} … ${losses.slice(-3)}`);
  await drawn(page, 'training-grid', (d) => d.grid);
  // Served cross-origin isolated, the worker trains on as many threads as the page's pass
  // (the threaded trainer, each step's batch cut into one part a thread), and says so.
  const expected = await page.evaluate(() => (self.crossOriginIsolated ? Math.min(navigator.hardwareConcurrency, 8) : 1));
  const { threads, threadsWhy } = await training(page);
  assert.equal(threads, expected, `threads: ${threadsWhy}`);
  assert.match(await page.textContent('#train-status'), expected > 1 ? new RegExp(`on ${expected} threads`) : /on one thread/);

  await page.click('#train-pause');
  await page.waitForFunction(() => window.__tviz.training.status === 'paused');
  const pausedAt = (await training(page)).step;
  assert.match(await page.textContent('#train-status'), new RegExp(`Paused · step ${pausedAt.toLocaleString('en')} of 3,000`));

  // The model as it is now, in every view above.
  await page.click('#train-open');
  await page.waitForFunction(() => window.__tviz.model === 'trained-here');
  assert.match(await page.$eval('#model option:checked', (o) => o.textContent), /^Trained here \(step [\d,]+\) · decoder · in this page$/);
  await page.fill('#text', 'Mary gave the ball to Tom.');
  const attention = await drawn(page, 'attention', (d, text) => d.geometry && d.col_labels.length === text.length + 1, 'Mary gave the ball to Tom.');
  assert.deepEqual(attention.col_labels.slice(1, 5), ['M', 'a', 'r', 'y']);
  assert.equal((await training(page)).step, pausedAt, 'a paused run stays where it was');

  // Resume: the run goes on past where it stopped.
  await page.locator('#training-section').scrollIntoViewIfNeeded();
  assert.equal(await page.textContent('#train-start'), 'Resume');
  await page.click('#train-start');
  await page.waitForFunction((at) => window.__tviz.training.step > at + 20, pausedAt);
  // Typing in the inspector while the run trains: the worker's next step waits for the
  // keystroke's charts (the page is cross-origin isolated, so the signal is shared memory).
  assert.equal(await page.evaluate(() => crossOriginIsolated), true);
  const heldBefore = await page.evaluate(() => window.__tviz.trainingStepsHeld);
  await page.locator('#input-section').scrollIntoViewIfNeeded();
  await page.type('#text', ' and Sam');
  await page.waitForFunction((n) => window.__tviz.trainingStepsHeld > n, heldBefore);
  await page.fill('#text', 'Mary gave the ball to Tom.');
  await page.waitForFunction((at) => window.__tviz.training.step > at + 40, pausedAt); // and goes on
  await page.locator('#training-section').scrollIntoViewIfNeeded();
  await page.click('#train-pause');
  await page.waitForFunction(() => window.__tviz.training.status === 'paused');

  // Export: three files, which the CLI reads as a model of its own format.
  const dir = mkdtempSync(join(tmpdir(), 'tviz-trained-'));
  const downloads = [];
  page.on('download', (d) => downloads.push(d));
  await page.click('#train-export');
  while (downloads.length < 3) await page.waitForEvent('download');
  for (const d of downloads) await d.saveAs(join(dir, d.suggestedFilename()));
  assert.deepEqual(downloads.map((d) => d.suggestedFilename()).sort(), ['config.json', 'model.safetensors', 'tokenizer.json']);
  const predicted = JSON.parse(cli(['predict', '--dir', dir, '--text', 'Mary gave the ball to', '--top', '3']));
  assert.deepEqual(predicted.tokens, ['<|endoftext|>', ...'Mary gave the ball to']);
  assert.equal(predicted.next.length, 3);
  assert.ok(predicted.next.every((n) => n.prob > 0 && n.prob < 1), JSON.stringify(predicted.next));

  // The page opens the exported files again; a partial choice is named beside the control.
  await page.setInputFiles('#train-files', [join(dir, 'config.json')]);
  await page.waitForFunction(() => !document.getElementById('train-files-message').hidden);
  assert.match(await page.textContent('#train-files-message'), /missing: tokenizer\.json, model\.safetensors/);
  await page.setInputFiles('#train-files', ['config.json', 'tokenizer.json', 'model.safetensors'].map((f) => join(dir, f)));
  await page.waitForFunction(() => window.__tviz.training.opened === 'files');
  assert.match(await page.$eval('#model option:checked', (o) => o.textContent), /^Trained here \(from files\) · decoder · in this page$/);
  assert.equal(await page.isHidden('#train-files-message'), true);
  const reopened = await drawn(page, 'attention', (d, text) => d.geometry && d.col_labels.length === text.length + 1, 'Mary gave the ball to Tom.');
  assert.deepEqual(reopened.col_labels.slice(1, 5), ['M', 'a', 'r', 'y']);
  assert.deepEqual(problems, []);
});

test('a link reproduces a run\'s settings, and a link to a model trained in another tab says why it is gone', async () => {
  const { page, problems } = await openPage(env.base);
  await page.locator('#training-section').scrollIntoViewIfNeeded();
  await page.waitForFunction(() => window.__tviz.training?.formReady);
  await fill(page, { 'train-layers': '2', 'train-heads': '2', 'train-width': '16', 'train-context': '32', 'train-batch': '4', 'train-steps': '500', 'train-rate': '0.003', 'train-seed': '9', 'train-norm': 'post', 'train-positions': false });
  await page.click('#train-start');
  await page.waitForFunction(() => window.__tviz.training?.evaluations >= 1);
  await page.click('#train-pause');
  await page.click('#train-open');
  await page.waitForFunction(() => window.__tviz.model === 'trained-here');
  await page.waitForFunction(() => window.__tvizUrlWritten() && location.search.includes('train='));
  const link = page.url();
  assert.match(link, /[?&]train=l2_h2_d16_c32_b4_n500_r0\.003_s9_post_nopos_stories(&|#|$)/);
  assert.match(link, /[?&]model=trained-here(&|#|$)/);

  const again = await openPage(link);
  await again.page.waitForFunction(() => !document.getElementById('notice').hidden);
  assert.match(await again.page.textContent('#notice'), /trained in its page: its weights stayed in that tab, so lecture-post-ln is shown\. The run's settings are in the Training section/);
  await again.page.locator('#training-section').scrollIntoViewIfNeeded();
  await again.page.waitForFunction(() => window.__tviz.training?.formReady);
  const form = await again.page.evaluate(() => Object.fromEntries(['train-layers', 'train-heads', 'train-width', 'train-context', 'train-batch', 'train-steps', 'train-rate', 'train-seed', 'train-norm', 'train-task'].map((id) => [id, document.getElementById(id).value])));
  assert.deepEqual(form, { 'train-layers': '2', 'train-heads': '2', 'train-width': '16', 'train-context': '32', 'train-batch': '4', 'train-steps': '500', 'train-rate': '0.003', 'train-seed': '9', 'train-norm': 'post', 'train-task': 'stories' });
  assert.equal(await again.page.isChecked('#train-positions'), false);
  assert.equal(await again.page.inputValue('#train-preset'), 'custom');
  assert.deepEqual([...problems, ...again.problems], []);
});

test('the reversal task and the corpus task train in the page, each with its own held-out text', async () => {
  const { page, problems } = await openPage(env.base);
  await page.locator('#training-section').scrollIntoViewIfNeeded();
  await page.waitForFunction(() => window.__tviz.training?.formReady);
  const small = { 'train-layers': '2', 'train-heads': '2', 'train-width': '32', 'train-context': '32', 'train-batch': '8', 'train-steps': '2000', 'train-rate': '0.003', 'train-seed': '1' };
  for (const [task, heldOut] of [['reverse', 'held-out strings'], ['text', 'held-out chapters']]) {
    await fill(page, { ...small, 'train-task': task });
    await page.click('#train-start');
    // The text task fetches the corpus's chapters first; then its loss falls like any run's.
    await page.waitForFunction(() => window.__tviz.training?.evaluations >= 2 && window.__tviz.training.losses >= 60);
    const loss = await drawn(page, 'training-loss', (d, label) => d.plotted?.series?.[1]?.label === label, heldOut);
    // No repeated runs in these tasks: no second-copy line.
    assert.deepEqual(loss.plotted.series.map((s) => s.label), ['training loss', heldOut], task);
    const losses = loss.plotted.series[0].points.map(([, l]) => l);
    assert.ok(mean(losses.slice(-10)) < mean(losses.slice(0, 10)) - 0.3, `${task}: the loss falls: ${losses.slice(0, 3)} … ${losses.slice(-3)}`);
    // Measured from step 0 (the random weights) on text the run never trained on: finite, and
    // by now below the uniform guess over the 97 characters.
    const heldOutLosses = loss.plotted.series[1].points.map(([, l]) => l);
    assert.ok(heldOutLosses.every(Number.isFinite) && heldOutLosses.at(-1) < Math.log(97), `${task}: held-out ${heldOutLosses}`);
    await drawn(page, 'training-grid', (d) => d.grid);
    assert.equal((await training(page)).error, null);
    // Reset: Train then starts the next task's run (after a Pause it would resume this one).
    await page.click('#train-reset');
    await page.waitForFunction(() => window.__tviz.training.status === 'idle');
  }
  // The link keeps the task.
  await page.waitForFunction(() => window.__tvizUrlWritten() && /[?&]train=[^&#]*_text(&|#|$)/.test(location.search));
  assert.deepEqual(problems, []);
});
