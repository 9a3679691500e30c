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
  colliders: 0,       // colliders drawn (session.colliders)
  colliderFrame: -1,  // frame whose collider poses are drawn, -1 = none
  colliderDrawnAt: new Map(), // index -> wall clock when its collider poses were drawn
  colliderError: '',
  // The colliders' transforms as drawn (three.js column-major 4x4 each).
  colliderMatrices: () => colliderObjs.map((o) => Array.from(o.outer.matrix.elements)),
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
  clearColliders();
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
  clearColliders();
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
        // The colliders once the owner's frames are readable: the same
        // tokens, so a page that may not read the session gets none.
        loadColliders(id, gen, rep.frames.length ? rep.frames[0].index : 0);
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
        // The newest frame's colliders are asked for now, beside the next
        // frames.get (awaiting them here would slow the frames down).
        prefetchColliders(id, last, gen);
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
    clearColliders();
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
  wantColliders(i);
  const keys = [...view.frames.keys()];
  $('scrub').min = Math.min(...keys);
  $('scrub').max = Math.max(...keys);
  $('scrub').value = i;
  $('frame').textContent = 'frame ' + i + ' / ' + Math.max(...keys);
  return true;
}

// ---- colliders -------------------------------------------------------------
//
// session.colliders (proto/PROTOCOL.md) gives every collider of the session
// placed at a frame: its shape in its own space, its rigid transform at
// that frame, a mesh's triangles (asked for once, "mesh": true) and a
// deforming mesh's pose. The page asks again, without the mesh, for each
// frame it shows, so keyframed and deforming colliders move with the cloth.

const COLLIDER_COLOUR = 0x7f93b0; // grey-blue, apart from the cloth's warm colours
let colliderRoot = null;  // THREE.Group of every collider, or null
let colliderObjs = [];    // per collider: { outer: Group (its transform), geo, deforming }
let colliderSession = null;
let colliderGen = 0;
let colliderWant = -1;
let colliderBusy = false;
const colliderAhead = new Map(); // frame -> session.colliders reply fetched before it is shown

function clearColliders() {
  colliderGen++;
  if (colliderRoot) {
    scene.remove(colliderRoot);
    for (const c of colliderObjs) c.geo.dispose();
  }
  colliderRoot = null;
  colliderObjs = [];
  colliderSession = null;
  colliderWant = -1;
  colliderBusy = false;
  colliderAhead.clear();
  view.colliders = 0;
  view.colliderFrame = -1;
  view.colliderDrawnAt.clear();
  view.colliderError = '';
}

function f32(b) {
  return new Float32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength));
}

// The cloth's bounding sphere at the first frame received, to place and
// size the (infinite) planes.
function clothSphere() {
  const p = view.frames.values().next().value;
  if (!p) return new THREE.Sphere(new THREE.Vector3(), 1);
  const g = new THREE.BufferGeometry();
  g.setAttribute('position', new THREE.BufferAttribute(p, 3));
  g.computeBoundingSphere();
  const s = g.boundingSphere.clone();
  g.dispose();
  return s;
}

function colliderGeometry(c) {
  const v3 = (a) => new THREE.Vector3(a[0], a[1], a[2]);
  const up = new THREE.Vector3(0, 1, 0);
  let geo;
  const place = new THREE.Object3D();
  switch (c.shape) {
    case 'sphere':
      geo = new THREE.SphereGeometry(c.radius, 48, 24);
      place.position.copy(v3(c.center));
      break;
    case 'box':
      geo = new THREE.BoxGeometry(2 * c.half_extents[0], 2 * c.half_extents[1], 2 * c.half_extents[2]);
      place.position.copy(v3(c.center));
      break;
    case 'capsule': {
      const a = v3(c.a);
      const b = v3(c.b);
      const len = a.distanceTo(b);
      geo = new THREE.CapsuleGeometry(c.radius, len, 12, 32);
      place.position.copy(a).add(b).multiplyScalar(0.5);
      if (len > 0) place.quaternion.setFromUnitVectors(up, b.clone().sub(a).normalize());
      break;
    }
    case 'plane': {
      // Drawn as a square around the point of the plane nearest the
      // cloth, four cloth radii across, as drape preview draws it.
      const n = v3(c.normal).normalize();
      const s = clothSphere();
      const off = s.center.clone().sub(v3(c.point)).dot(n);
      geo = new THREE.PlaneGeometry(4 * s.radius, 4 * s.radius);
      place.position.copy(s.center).addScaledVector(n, -off);
      place.quaternion.setFromUnitVectors(new THREE.Vector3(0, 0, 1), n);
      break;
    }
    case 'mesh': {
      geo = new THREE.BufferGeometry();
      const pos = c.positions ? f32(c.positions) : f32(c.vertices);
      geo.setAttribute('position', new THREE.BufferAttribute(pos, 3));
      const t = c.triangles;
      geo.setIndex(new THREE.BufferAttribute(new Uint32Array(t.buffer.slice(t.byteOffset, t.byteOffset + t.byteLength)), 1));
      geo.computeVertexNormals();
      break;
    }
    default:
      return null;
  }
  place.updateMatrix();
  if (c.shape !== 'mesh') geo.applyMatrix4(place.matrix);
  return geo;
}

function buildColliders(rep) {
  clearCollidersKeepGen();
  colliderRoot = new THREE.Group();
  const mat = new THREE.MeshLambertMaterial({ color: COLLIDER_COLOUR, side: THREE.DoubleSide });
  for (const c of rep.colliders) {
    const geo = colliderGeometry(c);
    if (!geo) continue;
    const outer = new THREE.Group();
    outer.matrixAutoUpdate = false;
    outer.add(new THREE.Mesh(geo, mat));
    colliderRoot.add(outer);
    colliderObjs.push({ outer, geo, deforming: !!c.positions });
  }
  scene.add(colliderRoot);
  view.colliders = colliderObjs.length;
}

function clearCollidersKeepGen() {
  const gen = colliderGen;
  const session = colliderSession;
  clearColliders();
  colliderGen = gen;
  colliderSession = session;
}

// Places every collider as the reply says (its frame's transform and, for
// a deforming mesh, its pose).
function poseColliders(rep) {
  rep.colliders.forEach((c, k) => {
    const o = colliderObjs[k];
    if (!o) return;
    const r = c.rotation;
    const t = c.translate;
    o.outer.matrix.set(r[0], r[1], r[2], t[0], r[3], r[4], r[5], t[1], r[6], r[7], r[8], t[2], 0, 0, 0, 1);
    o.outer.matrixWorldNeedsUpdate = true;
    if (o.deforming && c.positions) {
      const attr = o.geo.getAttribute('position');
      attr.array.set(f32(c.positions));
      attr.needsUpdate = true;
      o.geo.computeVertexNormals();
      o.geo.computeBoundingSphere();
    }
  });
  view.colliderFrame = rep.frame;
  if (!view.colliderDrawnAt.has(rep.frame)) {
    view.colliderDrawnAt.set(rep.frame, performance.timeOrigin + performance.now());
  }
}

async function loadColliders(id, gen, frame) {
  const cgen = ++colliderGen;
  colliderSession = id;
  colliderBusy = true;
  try {
    const rep = await ctl.request('session.colliders', {
      session: id, ...(owner ? { token: owner } : {}), frame, mesh: true,
    }, auth);
    if (gen !== fetchGen || cgen !== colliderGen) return;
    buildColliders(rep);
    poseColliders(rep);
  } catch (e) {
    if (gen !== fetchGen || cgen !== colliderGen) return;
    // A daemon from before session.colliders answers EPROTO: the cloth
    // alone, as before.
    view.colliderError = e.code || e.message;
  } finally {
    if (cgen === colliderGen) colliderBusy = false;
  }
  if (cgen === colliderGen) wantColliders(view.shown);
}

// Asks for the colliders of frame i unless they are drawn or on their way;
// one request at a time, and the newest frame wins.
async function wantColliders(i) {
  colliderWant = i;
  const ahead = colliderAhead.get(i);
  if (ahead && ahead.colliders.length === colliderObjs.length && view.colliderFrame !== i) poseColliders(ahead);
  // Without colliders there is nothing to move: no request per frame.
  if (colliderBusy || !colliderRoot || !colliderObjs.length || colliderSession === null ||
      view.colliderFrame === i) return;
  const cgen = colliderGen;
  const id = colliderSession;
  colliderBusy = true;
  try {
    while (cgen === colliderGen && colliderWant !== view.colliderFrame) {
      const f = colliderWant;
      const rep = await ctl.request('session.colliders', {
        session: id, ...(owner ? { token: owner } : {}), frame: f,
      }, auth);
      if (cgen !== colliderGen) return;
      if (rep.colliders.length !== colliderObjs.length) {
        // Colliders were added or removed since: fetch their meshes again.
        colliderBusy = false;
        loadColliders(id, fetchGen, f);
        return;
      }
      poseColliders(rep);
    }
  } catch (e) {
    if (cgen === colliderGen) view.colliderError = e.code || e.message;
  } finally {
    if (cgen === colliderGen) colliderBusy = false;
  }
}

// Fetches the colliders of live frame f as soon as the frame has arrived,
// so they are drawn with it or right after (wantColliders uses the reply
// when the frame is shown later).
async function prefetchColliders(id, f, gen) {
  if (!colliderRoot || !colliderObjs.length || colliderSession !== id) return;
  const cgen = colliderGen;
  try {
    const rep = await ctl.request('session.colliders', {
      session: id, ...(owner ? { token: owner } : {}), frame: f,
    }, auth);
    if (gen !== fetchGen || cgen !== colliderGen) return;
    colliderAhead.set(f, rep);
    // Keep only the newest few.
    for (const k of colliderAhead.keys()) if (colliderAhead.size > 8) colliderAhead.delete(k);
    if (view.shown === f && view.colliderFrame !== f && rep.colliders.length === colliderObjs.length) {
      poseColliders(rep);
    }
  } catch (e) {
    if (cgen === colliderGen) view.colliderError = e.code || e.message;
  }
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
