// The browser view of draped (draped --http): the box, its sessions and a
// live 3D view of one. It speaks the ordinary control protocol
// (proto/PROTOCOL.md) over a WebSocket to /ws, as an SP REQ peer of the
// daemon's REP socket: each message is a 4-byte request id (high bit set)
// followed by one msgpack map. Every request carries the token the user
// typed; the daemon decides what it may see, so a page without the tokens
// is sent nothing.
import { decode, encode } from '@msgpack/msgpack';
import * as THREE from 'three';
import { OrbitControls } from 'three/examples/jsm/controls/OrbitControls.js';

const $ = (id) => document.getElementById(id);

// What the page shows, for people and for the browser test.
const view = {
  loggedIn: false,
  session: null,      // picked session id
  frames: new Map(),  // index -> Float32Array of positions
  stats: new Map(),   // index -> stats map
  shown: 0,           // frame index drawn, 0 = none
  received: 0,        // frames received
  latencies: [],      // ms from a frame's reply arriving to it being drawn
  drawnAt: new Map(), // index -> wall clock (Unix ms) when first drawn, to
                      // compare with the daemon's history.stored_ms
  error: '',
};
window.drapeView = view;

// ---- the control connection ---------------------------------------------

class Control {
  constructor(url) {
    this.url = url;
    this.next = 1;
    this.pending = new Map();
    this.client = Math.floor(Math.random() * 2 ** 52);
  }

  open() {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(this.url, 'rep.sp.nanomsg.org');
      ws.binaryType = 'arraybuffer';
      ws.onopen = () => { this.ws = ws; resolve(); };
      ws.onerror = () => reject(new Error('cannot connect to ' + this.url));
      ws.onclose = () => {
        for (const p of this.pending.values()) p.reject(new Error('connection closed'));
        this.pending.clear();
        this.ws = null;
      };
      ws.onmessage = (ev) => this.onMessage(ev.data);
    });
  }

  onMessage(buf) {
    const arrived = performance.now();
    if (buf.byteLength < 4) return;
    const id = new DataView(buf).getUint32(0) & 0x7fffffff;
    const p = this.pending.get(id);
    if (!p) return;
    this.pending.delete(id);
    let rep;
    try {
      rep = decode(new Uint8Array(buf, 4));
    } catch (e) {
      p.reject(e);
      return;
    }
    rep.arrived = arrived;
    if (rep.ok) p.resolve(rep);
    else p.reject(Object.assign(new Error(rep.error ? rep.error.message : 'request failed'),
      { code: rep.error ? rep.error.code : 'EINTERNAL' }));
  }

  request(op, fields, auth) {
    if (!this.ws) return Promise.reject(new Error('not connected'));
    const id = this.next++;
    if (this.next > 0x7fffffff) this.next = 1;
    const req = Object.assign({ v: 1, id, op, client: this.client }, fields);
    if (auth) req.auth = auth;
    const body = encode(req);
    const msg = new Uint8Array(4 + body.length);
    new DataView(msg.buffer).setUint32(0, (id | 0x80000000) >>> 0);
    msg.set(body, 4);
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.ws.send(msg);
    });
  }
}

let ctl = null;
let auth = '';
let owner = null;
let pollTimer = 0;
let fetchGen = 0;

function hexToken(s) {
  s = s.trim();
  if (!/^[0-9a-fA-F]{32}$/.test(s)) return null;
  const t = new Uint8Array(16);
  for (let i = 0; i < 16; i++) t[i] = parseInt(s.substr(i * 2, 2), 16);
  return t;
}

function setStatus(text) { $('status').textContent = text; }

function clearView() {
  view.loggedIn = false;
  view.session = null;
  view.frames.clear();
  view.drawnAt.clear();
  view.stats.clear();
  view.shown = 0;
  sessionInfo = new Map();
  $('main').hidden = true;
  $('box').textContent = '';
  $('sessions').tBodies[0].textContent = '';
  if (mesh) mesh.visible = false;
  $('frame').textContent = '-';
}

async function login(ev) {
  ev.preventDefault();
  clearView();
  clearInterval(pollTimer);
  fetchGen++;
  auth = $('token').value.trim();
  const ownerText = $('owner').value.trim();
  owner = ownerText ? hexToken(ownerText) : null;
  if (ownerText && !owner) {
    setStatus('the owner token is 32 hex digits');
    return;
  }
  if (!auth) {
    // Without a token nothing is asked for and nothing is shown.
    setStatus('enter the server token');
    return;
  }
  try {
    if (!ctl || !ctl.ws) {
      ctl = new Control((location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host + '/ws');
      await ctl.open();
    }
    const hello = await ctl.request('hello', { client_name: 'drape web' });
    await refresh();
    view.loggedIn = true;
    $('main').hidden = false;
    setStatus('logged in: ' + hello.server);
    pollTimer = setInterval(() => refresh().catch(fail), 1000);
  } catch (e) {
    fail(e);
  }
}

function fail(e) {
  view.error = e.code || e.message;
  if (e.code === 'EPERM') {
    clearView();
    clearInterval(pollTimer);
    setStatus('refused: ' + e.message);
  } else {
    setStatus('error: ' + e.message);
  }
}

// The JSON API (server/webapi.h) with the same token: the box, and every
// session's owner, state, progress and per-frame statistics.
async function api(path) {
  const r = await fetch(path, { headers: { Authorization: 'Bearer ' + auth }, cache: 'no-store' });
  const body = await r.json();
  if (!r.ok) {
    throw Object.assign(new Error(body.error ? body.error.message : 'HTTP ' + r.status),
      { code: body.error ? body.error.code : 'EINTERNAL' });
  }
  return body;
}

let sessionInfo = new Map();

async function refresh() {
  // server.stats over the control protocol checks the token like every
  // other request; the API then gives the details.
  await ctl.request('server.stats', {}, auth);
  const [box, list] = await Promise.all([api('/api/box'), api('/api/sessions')]);
  const el = $('box');
  el.textContent = '';
  const rows = [['server', box.server], ['sessions', box.sessions], ['running', box.running],
    ['queued', box.queued], ['solver threads', box.threads], ['frames solved', box.frames_solved],
    ['memory', (Number(box.memory) / 1048576).toFixed(1) + ' MiB'],
    ['load', box.load ? box.load.map((x) => x.toFixed(2)).join(' ') : '-']];
  for (const [k, v] of rows) {
    const dt = document.createElement('dt');
    dt.textContent = k;
    const dd = document.createElement('dd');
    dd.textContent = String(v);
    el.append(dt, dd);
  }
  const body = $('sessions').tBodies[0];
  body.textContent = '';
  sessionInfo = new Map();
  for (const s of list.sessions) {
    sessionInfo.set(s.id, s);
    const tr = document.createElement('tr');
    tr.dataset.id = s.id;
    if (s.id === view.session) tr.className = 'picked';
    const progress = s.progress === null ? String(s.frames_done)
      : s.frames_done + ' (' + Math.round(100 * s.progress) + '%)';
    for (const v of [s.id, s.name || '', s.owner || s.owner_client.slice(-6), s.state, progress, s.vertices]) {
      const td = document.createElement('td');
      td.textContent = String(v);
      tr.append(td);
    }
    tr.onclick = () => pick(s.id);
    body.append(tr);
  }
  drawPlot();
}

// ---- one session's frames -----------------------------------------------

async function pick(id) {
  const gen = ++fetchGen;
  view.session = id;
  view.frames.clear();
  view.drawnAt.clear();
  view.stats.clear();
  view.shown = 0;
  view.error = '';
  if (mesh) mesh.visible = false;
  $('frame').textContent = '-';
  $('session-msg').textContent = '';
  for (const tr of $('sessions').tBodies[0].rows) tr.className = Number(tr.dataset.id) === id ? 'picked' : '';
  drawPlot();
  // Without an owner token the request goes without one: with --users-file
  // the owning user (or an admin) may read it by their user token alone;
  // otherwise draped refuses it and the page says why.
  try {
    const st = await ctl.request('session.status', { session: id }, auth);
    let next = Math.max(st.frames_first || 1, 1);
    let first = true;
    while (gen === fetchGen) {
      const rep = await ctl.request('frames.get', {
        session: id, ...(owner ? { token: owner } : {}), first: next, count: 64, wait_ms: 10000, mesh: first,
      }, auth);
      if (gen !== fetchGen) return;
      if (first) {
        setMesh(rep.triangles);
        first = false;
      }
      for (const f of rep.frames) {
        const b = f.positions;
        view.frames.set(f.index, new Float32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength)));
        view.stats.set(f.index, f.stats || {});
        view.received++;
        next = f.index + 1;
      }
      if (rep.frames.length) {
        const last = rep.frames[rep.frames.length - 1].index;
        newFrames(last, rep.arrived);
      }
      if (!rep.live && rep.frames.length === 0) {
        $('session-msg').textContent = 'run finished';
        await new Promise((r) => setTimeout(r, 2000));
      }
    }
  } catch (e) {
    if (gen !== fetchGen) return;
    view.error = e.code || e.message;
    view.frames.clear();
    view.drawnAt.clear();
    if (mesh) mesh.visible = false;
    $('frame').textContent = '-';
    $('session-msg').textContent = 'session ' + id + ': ' + e.message;
  }
}

// ---- drawing -------------------------------------------------------------

let renderer, scene, camera, controls, mesh;
let framed = false;
let playing = true;
let playFrame = 0;
let pendingArrival = 0;

function initGL() {
  const host = $('viewport');
  renderer = new THREE.WebGLRenderer({ antialias: true, preserveDrawingBuffer: true });
  renderer.setPixelRatio(1);
  renderer.setClearColor(0x262a30);
  host.append(renderer.domElement);
  scene = new THREE.Scene();
  camera = new THREE.PerspectiveCamera(40, 1, 0.01, 1000);
  camera.position.set(2, 2, 3);
  controls = new OrbitControls(camera, renderer.domElement);
  scene.add(new THREE.AmbientLight(0xffffff, 0.35));
  const key = new THREE.DirectionalLight(0xffffff, 1.6);
  key.position.set(-2, 4, 3);
  const fill = new THREE.DirectionalLight(0xffffff, 0.6);
  fill.position.set(3, 0.5, -2);
  scene.add(key, fill);
  const resize = () => {
    const w = host.clientWidth || 640;
    const h = host.clientHeight || 480;
    renderer.setSize(w, h);
    camera.aspect = w / h;
    camera.updateProjectionMatrix();
  };
  window.addEventListener('resize', resize);
  resize();
  requestAnimationFrame(tick);
}

function setMesh(tri) {
  if (mesh) {
    scene.remove(mesh);
    mesh.geometry.dispose();
  }
  framed = false;
  const geo = new THREE.BufferGeometry();
  const idx = new Uint32Array(tri.buffer.slice(tri.byteOffset, tri.byteOffset + tri.byteLength));
  geo.setIndex(new THREE.BufferAttribute(idx, 1));
  // Front terracotta, back sand, as in drape preview.
  const front = new THREE.MeshLambertMaterial({ color: 0xd66e48, side: THREE.FrontSide });
  const back = new THREE.MeshLambertMaterial({ color: 0xdebe78, side: THREE.BackSide });
  geo.addGroup(0, idx.length, 0);
  geo.addGroup(0, idx.length, 1);
  mesh = new THREE.Mesh(geo, [front, back]);
  mesh.visible = false;
  scene.add(mesh);
}

function showFrame(i) {
  const p = view.frames.get(i);
  if (!mesh || !p) return false;
  const geo = mesh.geometry;
  const attr = geo.getAttribute('position');
  if (!attr || attr.array.length !== p.length) geo.setAttribute('position', new THREE.BufferAttribute(p.slice(), 3));
  else { attr.array.set(p); attr.needsUpdate = true; }
  geo.computeVertexNormals();
  geo.computeBoundingSphere();
  if (!framed) {
    const s = geo.boundingSphere;
    controls.target.copy(s.center);
    camera.position.copy(s.center).add(new THREE.Vector3(0.6, 0.35, 1).normalize().multiplyScalar(s.radius * 3.2));
    framed = true;
  }
  mesh.visible = true;
  view.shown = i;
  const keys = [...view.frames.keys()];
  $('scrub').min = Math.min(...keys);
  $('scrub').max = Math.max(...keys);
  $('scrub').value = i;
  $('frame').textContent = 'frame ' + i + ' / ' + Math.max(...keys);
  return true;
}

function newFrames(last, arrived) {
  if ($('follow').checked && playing) {
    playFrame = last;
    pendingArrival = arrived;
  }
}

function tick() {
  requestAnimationFrame(tick);
  controls.update();
  if (playing && view.frames.size) {
    if (!$('follow').checked) {
      const keys = [...view.frames.keys()];
      const lo = Math.min(...keys);
      const hi = Math.max(...keys);
      playFrame = playFrame >= hi || playFrame < lo ? lo : playFrame + 1;
    }
    if (playFrame !== view.shown) showFrame(playFrame);
  }
  renderer.render(scene, camera);
  if (view.shown && !view.drawnAt.has(view.shown)) {
    view.drawnAt.set(view.shown, performance.timeOrigin + performance.now());
  }
  if (pendingArrival && view.shown === playFrame) {
    view.latencies.push(performance.now() - pendingArrival);
    pendingArrival = 0;
  }
}

function drawPlot() {
  const c = $('plot');
  const g = c.getContext('2d');
  g.clearRect(0, 0, c.width, c.height);
  const info = sessionInfo.get(view.session);
  const h = info && info.history;
  if (!h || h.frame.length < 2) return;
  const series = [['max_strain', '#d66e48'], ['self_pairs', '#dec078'], ['contacts', '#8fa3bf']];
  series.forEach(([name, colour], row) => {
    const vals = h[name].map((x) => Number(x || 0));
    const hi = Math.max(...vals) || 1;
    g.strokeStyle = colour;
    g.beginPath();
    vals.forEach((v, i) => {
      const x = (i / (vals.length - 1)) * (c.width - 4) + 2;
      const y = c.height - 4 - (v / hi) * (c.height - 40);
      if (i) g.lineTo(x, y); else g.moveTo(x, y);
    });
    g.stroke();
    g.fillStyle = colour;
    g.fillText(name + ' max ' + hi.toPrecision(3), 4, 10 + 12 * row);
  });
}

$('login').addEventListener('submit', login);
$('play').onclick = () => {
  playing = !playing;
  $('play').textContent = playing ? 'pause' : 'play';
};
$('scrub').oninput = () => {
  playing = false;
  $('play').textContent = 'play';
  $('follow').checked = false;
  playFrame = Number($('scrub').value);
  showFrame(playFrame);
};
initGL();
