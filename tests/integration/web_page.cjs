// The browser view in a real headless Chromium (Debian's), driven by
// playwright-core: run by tests/integration/web.sh, which starts draped with
// --http and a flag run, and passes
//   WEB_URL      http://127.0.0.1:PORT/
//   WEB_TOKEN    the server auth token
//   WEB_OWNER    the owner token of session WEB_SESSION (running)
//   WEB_OUT      folder for the screenshots
// or, for the colliders (session.colliders drawn by the page), instead of
// WEB_SESSION and WEB_OWNER:
//   WEB_COL_SESSION, WEB_COL_OWNER  a running session with a sphere and a
//                                   mesh collider, and its owner token
// Prints PASS/FAIL lines, the frame latency, and "N passed, M failed".
'use strict';
const { chromium } = require('playwright-core');
const fs = require('fs');
const path = require('path');

const url = process.env.WEB_URL;
const token = process.env.WEB_TOKEN;
const owner = process.env.WEB_OWNER;
const session = Number(process.env.WEB_SESSION);
const out = process.env.WEB_OUT;
let passed = 0;
let failed = 0;

function check(name, ok, detail) {
  if (ok) {
    console.log('PASS ' + name);
    passed++;
  } else {
    console.log('FAIL ' + name + (detail ? ': ' + detail : ''));
    failed++;
  }
}

// Polls fn in the page until it returns true (generous deadline: the
// machine may be loaded); returns whether it did.
async function until(page, fn, arg, ms = 60000) {
  try {
    await page.waitForFunction(fn, arg, { timeout: ms, polling: 100 });
    return true;
  } catch (e) {
    return false;
  }
}

// Pixels of the 3D view in the cloth's colours (terracotta front, sand
// back, as lit), counted from the WebGL canvas itself.
function clothPixels(page) {
  return page.evaluate(() => {
    const gl = document.querySelector('#viewport canvas');
    if (!gl || document.getElementById('main').hidden) return 0;
    const c = document.createElement('canvas');
    c.width = gl.width;
    c.height = gl.height;
    const g = c.getContext('2d');
    g.drawImage(gl, 0, 0);
    const d = g.getImageData(0, 0, c.width, c.height).data;
    let n = 0;
    for (let i = 0; i < d.length; i += 4) {
      const r = d[i], gr = d[i + 1], b = d[i + 2];
      if (r > 60 && r > b * 1.4 && r >= gr) n++;
    }
    return n;
  });
}

// Pixels in the colliders' grey-blue (0x7f93b0 as lit: blue well above red,
// at least green), away from the background (0x262a30, too dark) and the
// cloth (red above blue).
function colliderPixels(page) {
  return page.evaluate(() => {
    const gl = document.querySelector('#viewport canvas');
    if (!gl || document.getElementById('main').hidden) return 0;
    const c = document.createElement('canvas');
    c.width = gl.width;
    c.height = gl.height;
    const g = c.getContext('2d');
    g.drawImage(gl, 0, 0);
    const d = g.getImageData(0, 0, c.width, c.height).data;
    let n = 0;
    for (let i = 0; i < d.length; i += 4) {
      const r = d[i], gr = d[i + 1], b = d[i + 2];
      if (b > 80 && b > r * 1.15 && b >= gr) n++;
    }
    return n;
  });
}

async function login(page, auth, own) {
  await page.goto(url);
  await page.fill('#token', auth);
  await page.fill('#owner', own);
  await page.click('#login-btn');
}

async function shot(page, name) {
  const file = path.join(out, name + '.png');
  await page.screenshot({ path: file });
  console.log('  screenshot ' + file);
}

// --users-file: WEB_USERS_TOKEN is user ana's token, WEB_USERS_MINE her
// session, WEB_USERS_OTHER bob's. Her page lists only hers and draws it by
// her user token alone; bob's is not listed (reading it over the WebSocket
// goes through draped's per-user checks, tested in test_users).
async function usersMode(page) {
  const utok = process.env.WEB_USERS_TOKEN;
  const mine = Number(process.env.WEB_USERS_MINE);
  const theirs = Number(process.env.WEB_USERS_OTHER);
  await login(page, utok, '');
  const listed = await until(page, (id) => !!document.querySelector('#sessions tbody tr[data-id="' + id + '"]'), mine);
  const rows = await page.evaluate(() => [...document.querySelectorAll('#sessions tbody tr')].map((r) => Number(r.dataset.id)));
  check("a user's page lists their session and none of another user's", listed && !rows.includes(theirs),
    'rows ' + JSON.stringify(rows) + ', mine ' + mine + ', theirs ' + theirs);
  await page.click('#sessions tbody tr[data-id="' + mine + '"]');
  const drawn = await until(page, () => window.drapeView.shown > 0, null, 120000);
  const pixels = await clothPixels(page);
  check("a user's page draws their own session by the user token alone", drawn && pixels > 1000, pixels + ' pixels');
  await shot(page, 'web-user');
}

// Median and range of the page's wall-clock stamps (index -> Unix ms)
// against the daemon's stored_ms for the same frames.
async function solveToDrawn(page, key, sessionId) {
  const drawn = await page.evaluate((k) => [...window.drapeView[k].entries()], key);
  const res = await fetch(url + 'api/sessions', { headers: { Authorization: 'Bearer ' + token } });
  const body = await res.json();
  const me = (body.sessions || []).find((x) => x.id === sessionId);
  const stored = new Map();
  if (me && me.history && me.history.stored_ms) me.history.frame.forEach((f, k) => stored.set(f, me.history.stored_ms[k]));
  const d = drawn.filter(([f]) => stored.has(f)).map(([f, t]) => t - stored.get(f));
  d.sort((a, b) => a - b);
  return d;
}

// The colliders: the page draws the sphere and the mesh block of a running
// session in their own colour, posed at the frame shown (live, paused and
// scrubbed), and a token that may not read the session shows none.
async function collidersMode(page) {
  const sid = Number(process.env.WEB_COL_SESSION);
  const own = process.env.WEB_COL_OWNER;
  await login(page, token, 'cd'.repeat(16));
  await until(page, (id) => !!document.querySelector('#sessions tbody tr[data-id="' + id + '"]'), sid);
  await page.click('#sessions tbody tr[data-id="' + sid + '"]');
  const eperm = await until(page, () => window.drapeView.error === 'EPERM');
  const foreign = await page.evaluate(() => ({ colliders: window.drapeView.colliders,
    frame: window.drapeView.colliderFrame, shown: window.drapeView.shown }));
  const foreignPixels = await colliderPixels(page);
  check('a token that may not read the session shows none of its colliders',
    eperm && foreign.colliders === 0 && foreign.frame === -1 && foreign.shown === 0 && foreignPixels === 0,
    JSON.stringify(foreign) + ' collider pixels ' + foreignPixels);
  await shot(page, 'web-colliders-other-owner');

  await login(page, token, own);
  await until(page, (id) => !!document.querySelector('#sessions tbody tr[data-id="' + id + '"]'), sid);
  await page.click('#sessions tbody tr[data-id="' + sid + '"]');
  const drawn = await until(page, () => window.drapeView.colliders === 2 && window.drapeView.colliderFrame > 0 &&
    window.drapeView.shown > 0, null, 120000);
  const st = await page.evaluate(() => ({ colliders: window.drapeView.colliders, error: window.drapeView.colliderError,
    shown: window.drapeView.shown, frame: window.drapeView.colliderFrame }));
  check('the page fetches both colliders of the session', drawn, JSON.stringify(st));
  // A few live frames, so the poses follow the cloth.
  await until(page, (f) => window.drapeView.colliderFrame > f + 3, st.frame, 60000);
  const cpx = await colliderPixels(page);
  const clpx = await clothPixels(page);
  check('collider-coloured pixels are drawn beside the cloth', cpx > 1000 && clpx > 300,
    cpx + ' collider pixels, ' + clpx + ' cloth pixels');
  await shot(page, 'web-colliders');

  // Paused, the colliders are those of the frame shown; scrubbed back, those
  // of the earlier frame.
  await page.click('#play');
  const paused = await until(page, () => window.drapeView.colliderFrame === window.drapeView.shown, null, 30000);
  // The sphere's keys (tests/data/scenes/web_colliders.json) slide it from
  // x = 0 at frame 1 to 0.3 at frame 200, linearly: its drawn transform
  // must be that frame's, 1.5 mm a frame apart; the block has none.
  const sphereX = (f) => (f <= 1 ? 0 : f >= 200 ? 0.3 : (0.3 * (f - 1)) / 199);
  const posed = () => page.evaluate(() => ({ shown: window.drapeView.shown, frame: window.drapeView.colliderFrame,
    m: window.drapeView.colliderMatrices() }));
  const atFrame = (p) => p.m.length === 2 && Math.abs(p.m[0][12] - sphereX(p.shown)) < 2e-4 &&
    p.m[0][13] === 0 && p.m[1][12] === 0 && p.m[1][0] === 1;
  const p1 = await posed();
  check('paused, the colliders are posed at the frame shown (the sphere where its keys put it)',
    paused && p1.frame === p1.shown && atFrame(p1),
    `frame ${p1.shown}, colliders of ${p1.frame}, sphere x ${p1.m[0] && p1.m[0][12]}, keys say ${sphereX(p1.shown)}`);
  const back = Math.max(1, Math.floor(p1.shown / 2));
  await page.evaluate((f) => {
    const s = document.getElementById('scrub');
    s.value = String(f);
    s.dispatchEvent(new Event('input'));
  }, back);
  const scrubbed = await until(page, (f) => window.drapeView.shown === f && window.drapeView.colliderFrame === f, back, 30000);
  const p2 = await posed();
  check('scrubbed back, the colliders follow to that frame', scrubbed && atFrame(p2) && p2.m[0][12] < p1.m[0][12],
    `to ${back}: frame ${p2.shown}, colliders of ${p2.frame}, sphere x ${p2.m[0] && p2.m[0][12]}, keys say ${sphereX(p2.shown)}`);
  await shot(page, 'web-colliders-scrubbed');

  const cloth = await solveToDrawn(page, 'drawnAt', sid);
  const col = await solveToDrawn(page, 'colliderDrawnAt', sid);
  const med = (a) => (a.length ? a[a.length >> 1] : NaN);
  check('solve-to-drawn is measured for the cloth and its colliders', cloth.length >= 3 && col.length >= 3 &&
    cloth[0] > -20 && col[0] > -20, `cloth ${cloth.length} frames, colliders ${col.length} frames`);
  if (cloth.length && col.length) {
    console.log(`  colliders scene: frame stored by draped -> cloth drawn: median ${med(cloth).toFixed(1)} ms ` +
      `over ${cloth.length} frames; -> its colliders drawn: median ${med(col).toFixed(1)} ms over ${col.length} frames`);
  }
}

(async () => {
  const exe = fs.existsSync('/usr/lib/chromium/chromium') ? '/usr/lib/chromium/chromium' : '/usr/bin/chromium';
  const browser = await chromium.launch({
    executablePath: exe,
    headless: true,
    args: ['--no-sandbox', '--use-angle=swiftshader', '--enable-unsafe-swiftshader', '--ignore-gpu-blocklist'],
  });
  const page = await browser.newPage({ viewport: { width: 1100, height: 700 } });
  page.on('pageerror', (e) => console.log('  page error: ' + e.message));
  if (process.env.WEB_COL_SESSION) {
    await collidersMode(page);
    await browser.close();
    console.log(`${passed} passed, ${failed} failed`);
    process.exit(failed ? 1 : 0);
  }
  if (process.env.WEB_USERS_TOKEN) {
    await usersMode(page);
    await browser.close();
    console.log(`${passed} passed, ${failed} failed`);
    process.exit(failed ? 1 : 0);
  }

  // 1. No token: nothing asked for, nothing shown.
  await login(page, '', '');
  await until(page, () => document.getElementById('status').textContent.includes('token'), null, 20000);
  const none = await page.evaluate(() => ({
    hidden: document.getElementById('main').hidden,
    rows: document.querySelectorAll('#sessions tbody tr').length,
    shown: window.drapeView.shown,
  }));
  check('without a token nothing is shown', none.hidden && none.rows === 0 && none.shown === 0 &&
    (await clothPixels(page)) === 0, JSON.stringify(none));
  await shot(page, 'web-no-token');

  // 2. A wrong server token: refused, nothing shown.
  await login(page, token + 'x', owner);
  const refused = await until(page, () => document.getElementById('status').textContent.startsWith('refused'));
  const wrong = await page.evaluate(() => ({
    hidden: document.getElementById('main').hidden,
    rows: document.querySelectorAll('#sessions tbody tr').length,
    status: document.getElementById('status').textContent,
  }));
  check('a wrong server token is refused and shows nothing', refused && wrong.hidden && wrong.rows === 0,
    JSON.stringify(wrong));

  // 3. The server token but another session's owner token: the session is
  //    listed (ids and states are public to token holders, PROTOCOL.md
  //    section 9), but none of its frames or mesh reach the page.
  const other = 'ab'.repeat(16);
  await login(page, token, other);
  const listed = await until(page, (id) => !!document.querySelector('#sessions tbody tr[data-id="' + id + '"]'), session);
  check('the session is listed with the server token', listed);
  await page.click('#sessions tbody tr[data-id="' + session + '"]');
  const eperm = await until(page, () => window.drapeView.error === 'EPERM');
  const foreign = await page.evaluate(() => ({
    frames: window.drapeView.frames.size, received: window.drapeView.received, shown: window.drapeView.shown,
    msg: document.getElementById('session-msg').textContent,
  }));
  const foreignPixels = await clothPixels(page);
  check('a token that may not read the session shows none of it',
    eperm && foreign.frames === 0 && foreign.received === 0 && foreign.shown === 0 && foreignPixels === 0,
    JSON.stringify(foreign) + ' cloth pixels ' + foreignPixels);
  await shot(page, 'web-other-owner');

  // 4. Both tokens: live frames, drawn; the counter advances.
  await login(page, token, owner);
  await until(page, (id) => !!document.querySelector('#sessions tbody tr[data-id="' + id + '"]'), session);
  await page.click('#sessions tbody tr[data-id="' + session + '"]');
  const first = await until(page, () => window.drapeView.shown > 0, null, 120000);
  // The frame drawn and the counter's text are read in one evaluation, so a
  // frame drawn between two separate reads cannot pair one frame's number
  // with the next one's text.
  const read = () => page.evaluate(() => ({ f: window.drapeView.shown,
                                             t: document.getElementById('frame').textContent }));
  const r1 = await read();
  const advanced = first && await until(page, (f) => window.drapeView.shown > f, r1.f, 120000);
  const r2 = await read();
  check('the frame counter advances with live frames', advanced && r1.t !== r2.t,
    `${r1.t} -> ${r2.t} (${r1.f} -> ${r2.f})`);
  // A few more frames for the latency figures.
  await until(page, (f) => window.drapeView.shown > f + 3, r2.f, 60000);
  const pixels = await clothPixels(page);
  check('cloth-coloured pixels are drawn', pixels > 1000, pixels + ' pixels');
  // The flag scene has no collider: none drawn, and nothing of the cloth
  // passes for a collider's colour (the colliders test's counter-check).
  const nocol = await colliderPixels(page);
  const ncol = await page.evaluate(() => window.drapeView.colliders);
  check('the flag (no colliders) shows no collider pixels', nocol === 0 && ncol === 0,
    nocol + ' collider pixels, ' + ncol + ' colliders');
  await shot(page, 'web-live');
  const lat = await page.evaluate(() => window.drapeView.latencies.slice());
  lat.sort((a, b) => a - b);
  if (lat.length) {
    console.log(`  frame reply received -> drawn: median ${lat[lat.length >> 1].toFixed(1)} ms, ` +
      `max ${lat[lat.length - 1].toFixed(1)} ms over ${lat.length} frames`);
  }
  // Solved to drawn: the daemon's wall-clock stamp of each frame stored
  // (history.stored_ms of /api/sessions) against the page's wall clock when
  // it first drew that frame, both on this machine's clock.
  const drawn = await page.evaluate(() => [...window.drapeView.drawnAt.entries()]);
  const res = await fetch(url + 'api/sessions', { headers: { Authorization: 'Bearer ' + token } });
  const body = await res.json();
  const me = (body.sessions || []).find((x) => x.id === session);
  const stored = new Map();
  if (me && me.history && me.history.stored_ms) {
    me.history.frame.forEach((f, k) => stored.set(f, me.history.stored_ms[k]));
  }
  const solveToDrawn = drawn.filter(([f]) => stored.has(f)).map(([f, t]) => t - stored.get(f));
  solveToDrawn.sort((a, b) => a - b);
  const med = solveToDrawn.length ? solveToDrawn[solveToDrawn.length >> 1] : NaN;
  // A frame cannot be drawn before it was solved (a few ms of slack for the
  // browser's clock origin); a stamp that is missing or not wall-clock time
  // would put the difference far outside a minute.
  check('solve-to-drawn latency is measured from the daemon\'s stamps',
    solveToDrawn.length >= 3 && solveToDrawn[0] > -20 && med < 60000,
    `${solveToDrawn.length} frames matched, min ${solveToDrawn[0]}, median ${med}`);
  if (solveToDrawn.length) {
    console.log(`  frame stored by draped -> drawn in the page: median ${med.toFixed(1)} ms, ` +
      `min ${solveToDrawn[0].toFixed(1)} ms, max ${solveToDrawn[solveToDrawn.length - 1].toFixed(1)} ms ` +
      `over ${solveToDrawn.length} frames`);
  }
  await browser.close();
  console.log(`${passed} passed, ${failed} failed`);
  process.exit(failed ? 1 : 0);
})().catch((e) => {
  console.log('FAIL browser test: ' + e.message);
  console.log(`${passed} passed, ${failed + 1} failed`);
  process.exit(1);
});
