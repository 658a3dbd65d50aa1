// The assign-add model run in the page (book/explorer.md), with no library: the exported weights decoded, the
// forward pass in float64 (the function `forward` of assignadd_core/report/explorer.py computes; tests/test_explorer.py
// checks this one against it and against PyTorch), and the task's rules (book/protocol.md): a sequence read and
// checked, its query classified, random sequences of each kind drawn. No drawing here: explorer.js draws the page.
//
// Models arrive as scripts (a browser reads no file of a page opened from disk, but runs its scripts): models.js
// calls AssignAddExplorer.manifest(...), each model's file AssignAddExplorer.weights(meta, base64).
(function () {
  "use strict";
  const FORMAT = 1;
  const registry = {manifest: null, raw: {}, models: {}, waiting: {}, base: null};

  // ---------------------------------------------------------------------------------------------- loading
  function scriptBase() {  // the folder of this script, where explorer/ lies
    const me = document.currentScript || Array.from(document.scripts).find(s => /explorer_model\.js/.test(s.src));
    return me ? me.src.replace(/[^/]*$/, "") : "";
  }
  registry.base = scriptBase();

  function inject(src, onError) {
    const script = document.createElement("script");
    script.src = src;
    script.async = true;
    script.onerror = onError;
    document.head.appendChild(script);
  }

  function loadManifest() {
    if (!registry.waiting.manifest) {
      registry.waiting.manifest = new Promise((resolve, reject) => {
        registry.onManifest = resolve;
        inject(registry.base + "explorer/models.js",
               () => reject(new Error("this build of the book has no explorer models (the book build exports them)")));
      });
    }
    return registry.waiting.manifest;
  }

  function loadModel(id) {
    if (registry.models[id]) return Promise.resolve(registry.models[id]);
    if (!registry.waiting[id]) {
      const entry = registry.manifest && registry.manifest.models[id];
      if (!entry) return Promise.reject(new Error(`no model "${id}" in this build`));
      registry.waiting[id] = new Promise((resolve, reject) => {
        registry["on:" + id] = resolve;
        inject(registry.base + "explorer/" + entry.file, () => {
          delete registry.waiting[id];
          reject(new Error(`the weights of ${id} could not be loaded`));
        });
      }).then(() => {
        const raw = registry.raw[id];
        delete registry.raw[id];
        const task = new Task(registry.manifest.tasks[entry.task], registry.manifest.pools);
        return (registry.models[id] = new Model(raw.meta, decode(raw.meta, raw.data), task, entry));
      });
    }
    return registry.waiting[id];
  }

  // ---------------------------------------------------------------------------------------------- weights
  function decode(meta, base64) {  // {name: {rows, cols, data: Float64Array}}: 24-bit integers times row scales
    if (meta.format !== FORMAT) throw new Error(`model file format ${meta.format}, this page reads ${FORMAT}`);
    const text = atob(base64), bytes = new Uint8Array(text.length);
    for (let i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i);
    const view = new DataView(bytes.buffer), weights = {};
    let at = 0;
    for (const [name, rows, cols] of meta.layout) {
      const scales = new Float64Array(rows);
      for (let r = 0; r < rows; r++, at += 4) scales[r] = view.getFloat32(at, true);
      const data = new Float64Array(rows * cols);
      for (let r = 0, k = 0; r < rows; r++) {
        for (let c = 0; c < cols; c++, k++, at += 3) {
          let v = bytes[at] | (bytes[at + 1] << 8) | (bytes[at + 2] << 16);
          if (v & 0x800000) v -= 0x1000000;
          data[k] = v * scales[r];
        }
      }
      weights[name] = {rows, cols, data};
    }
    if (at !== bytes.length) throw new Error(`model ${meta.id}: ${bytes.length} bytes, its layout says ${at}`);
    return weights;
  }

  // out[i] = sum over k of a[i, k] b[k, :] for the rows of a given as offsets into a flat array
  function rowTimes(a, aAt, b, out, outAt) {
    const cols = b.cols, inner = b.rows, bd = b.data;
    for (let k = 0; k < inner; k++) {
      const x = a[aAt + k];
      if (x === 0) continue;
      const at = k * cols;
      for (let c = 0; c < cols; c++) out[outAt + c] += x * bd[at + c];
    }
  }

  function product(a, b) {  // a [rows, k] @ b [k, cols], both {rows, cols, data}
    const out = new Float64Array(a.rows * b.cols);
    for (let r = 0; r < a.rows; r++) rowTimes(a.data, r * a.cols, b, out, r * b.cols);
    return {rows: a.rows, cols: b.cols, data: out};
  }

  function softmaxRow(scores, at, count) {  // in place over scores[at .. at + count)
    let top = -Infinity;
    for (let j = 0; j < count; j++) top = Math.max(top, scores[at + j]);
    let sum = 0;
    for (let j = 0; j < count; j++) sum += (scores[at + j] = Math.exp(scores[at + j] - top));
    for (let j = 0; j < count; j++) scores[at + j] /= sum;
  }

  // causal attention [n, n] (flat, zero above the diagonal): softmax over j <= i of scale * q_i . x_j
  function attention(q, x, n, d, scale) {
    const pattern = new Float64Array(n * n);
    for (let i = 0; i < n; i++) {
      const qi = i * d;
      for (let j = 0; j <= i; j++) {
        const xj = j * d;
        let s = 0;
        for (let c = 0; c < d; c++) s += q[qi + c] * x[xj + c];
        pattern[i * n + j] = s * scale;
      }
      softmaxRow(pattern, i * n, i + 1);
    }
    return pattern;
  }

  // ---------------------------------------------------------------------------------------------- the model
  class Model {
    constructor(meta, weights, task, entry) {
      this.id = meta.id;
      this.meta = meta;
      this.entry = entry;
      this.task = task;
      this.w = weights;
      this.d = weights.W_E.cols;
      this.scale = meta.scale;
      // layer 1 reads x0 = W_E[t] + W_pos[i], so its queries-times-W_QK and values are token plus position tables
      this.EQK = product(weights.W_E, weights.QK1);
      this.PQK = product(weights.W_pos, weights.QK1);
      this.EOV = product(weights.W_E, weights.OV1);
      this.POV = product(weights.W_pos, weights.OV1);
    }

    // logits at `=`, both layers' attention [query, key] (flat, n x n), the MLP's pre- and post-activations at `=`,
    // and the logits' two parts: the residual stream read directly by W_U, and the neurons through W_out W_U
    run(tokens) {
      const n = tokens.length, d = this.d, w = this.w, scale = this.scale;
      const E = w.W_E.data, Pos = w.W_pos.data, EQK = this.EQK.data, PQK = this.PQK.data;
      const EOV = this.EOV.data, POV = this.POV.data;
      const x0 = new Float64Array(n * d), x1 = new Float64Array(n * d), q = new Float64Array(n * d);
      for (let i = 0; i < n; i++) {  // x0_i = W_E[t_i] + W_pos[i]; its query side x0_i W_QK1 from the tables
        const e = tokens[i] * d, p = i * d;
        for (let c = 0; c < d; c++) {
          x0[p + c] = E[e + c] + Pos[p + c];
          q[p + c] = EQK[e + c] + PQK[p + c];
        }
      }
      const pattern1 = attention(q, x0, n, d, scale);
      x1.set(x0);
      for (let i = 0; i < n; i++) {  // x1_i = x0_i + sum_j p1[i, j] (x0_j W_OV1), x0_j W_OV1 from the tables
        const o = i * d;
        for (let j = 0; j <= i; j++) {
          const p = pattern1[i * n + j], e = tokens[j] * d, at = j * d;
          for (let c = 0; c < d; c++) x1[o + c] += p * (EOV[e + c] + POV[at + c]);
        }
      }
      q.fill(0);
      for (let i = 0; i < n; i++) rowTimes(x1, i * d, w.QK2, q, i * d);
      const pattern2 = attention(q, x1, n, d, scale);
      const read = new Float64Array(d), moved = new Float64Array(d), last = new Float64Array(d);
      for (let j = 0; j < n; j++) {  // what the lookup reads at `=`: sum_j p2[=, j] x1_j, then W_OV2
        const p = pattern2[(n - 1) * n + j], at = j * d;
        for (let c = 0; c < d; c++) read[c] += p * x1[at + c];
      }
      rowTimes(read, 0, w.OV2, moved, 0);
      for (let c = 0; c < d; c++) last[c] = x1[(n - 1) * d + c] + moved[c];
      const pre = new Float64Array(w.W_in.cols), post = new Float64Array(w.W_in.cols);
      rowTimes(last, 0, w.W_in, pre, 0);
      for (let k = 0; k < pre.length; k++) post[k] = Math.max(pre[k], 0);
      const direct = new Float64Array(w.W_U.cols), fromNeurons = new Float64Array(w.W_U.cols);
      rowTimes(last, 0, w.W_U, direct, 0);
      rowTimes(post, 0, w.W_outU, fromNeurons, 0);
      const logits = direct.map((v, c) => v + fromNeurons[c]);
      return {logits, pattern1, pattern2, pre, post, direct, fromNeurons, n};
    }

    neuronEffect(k, c) {  // what neuron k adds to logit c per unit of activation: (W_out W_U)[k, c]
      return this.w.W_outU.data[k * this.w.W_outU.cols + c];
    }
  }

  function probabilities(logits) {
    const p = Float64Array.from(logits);
    softmaxRow(p, 0, p.length);
    return p;
  }

  // ---------------------------------------------------------------------------------------------- the task
  const KINDS = {  // the random draws the page offers: label, and which queries they draw
    "0-var": "0-var", "1-var-left": "1-var, variable left", "1-var-right": "1-var, variable right",
    "2-var": "2-var", "held-out-pair": "held-out pair", "held-out-position": "variable in a held-out position"};

  class Task {
    constructor(spec, pools) {
      this.spec = spec;
      this.pools = pools || [];
      this.N = spec.modulus;
      this.nVars = spec.n_vars;
      this.seqLen = spec.seq_len;
      this.prefix = spec.seq_len - 4;
      this.plus = this.N;
      this.eq = this.N + 1;
      this.pad = this.N + 2;
      this.var0 = this.N + 3;
      this.names = [...Array.from({length: this.N}, (_, i) => String(i)), "+", "=", "PAD", ...spec.var_names];
      this.ids = new Map(this.names.map((name, i) => [name, i]));
      this.leftOnly = new Set(spec.left_only);  // never the right operand in training
      this.rightOnly = new Set(spec.right_only);  // never the left operand in training
      const pairs = mask => Array.from(mask).flatMap((bit, k) => (bit === "1" ? [[Math.floor(k / this.N), k % this.N]]
                                                                               : []));
      this.trainPairs = pairs(spec.train_pairs);
      this.heldOutPairs = pairs(spec.train_pairs.replace(/[01]/g, b => (b === "1" ? "0" : "1")));
      this.twoVarPairs = pairs(spec.two_var_pairs);
      const all = Array.from({length: this.nVars}, (_, v) => v);
      this.leftVars = all.filter(v => !this.rightOnly.has(v));
      this.rightVars = all.filter(v => !this.leftOnly.has(v));
      const ordered = all.flatMap(a => all.filter(b => b !== a).map(b => [a, b]));
      const unseen = ([a, b]) => (this.rightOnly.has(a) ? 1 : 0) + (this.leftOnly.has(b) ? 1 : 0);
      this.varPairs = [0, 1, 2].map(k => ordered.filter(p => unseen(p) === k));  // by operands in unseen positions
    }

    isNumber(t) { return t >= 0 && t < this.N; }
    isVariable(t) { return t >= this.var0 && t < this.var0 + this.nVars; }
    name(t) { return this.names[t]; }
    isTrainPair(a, b) { return this.spec.train_pairs[a * this.N + b] === "1"; }
    inTwoVarTraining(a, b) { return this.spec.two_var_pairs[a * this.N + b] === "1"; }

    // text -> {tokens} or {error, words, at}: one line saying what is wrong, and which word
    parse(text) {
      const words = String(text).trim().split(/[\s,]+/).filter(Boolean);
      if (!words.length) return {error: `Type a sequence of ${this.seqLen} tokens, e.g. ${this.example()}.`};
      const tokens = [];
      for (const [i, word] of words.entries()) {
        const id = this.ids.get(/^pad$/i.test(word) ? "PAD" : word);
        if (id === undefined) {
          const variables = `${this.names[this.var0]}–${this.names[this.var0 + this.nVars - 1]}`;
          return {error: `"${word}" at position ${i} is not a token: tokens are the numbers 0–${this.N - 1},` +
                         ` +, =, PAD and the variables ${variables}.`, words, at: i};
        }
        tokens.push(id);
      }
      return {tokens};
    }

    example() {  // the protocol page's example where the task is the paper's, else a drawn one
      const paper = "PAD PAD a 40 PAD j 18 PAD PAD PAD k 9 + a 27 =";
      const parsed = this.N === 59 && this.seqLen === 16 && this.nVars >= 11 ? this.parse(paper) : {};
      return parsed.tokens ? paper : this.format(this.draw("1-var-left"));
    }

    format(tokens) { return tokens.map(t => this.names[t]).join(" "); }

    // tokens -> {error, at} (at: the position to blame, where there is one), or a description of the query: operands
    // (variable, value, where the value is), the answer, its type, whether its pair or a variable's position was held
    // out of training, the pool of its kind, and notes on what is well formed but outside the task
    check(tokens) {
      const n = this.seqLen, P = this.prefix, name = t => this.names[t];
      if (tokens.length !== n) {
        return {error: `The sequence has ${tokens.length} token${tokens.length === 1 ? "" : "s"}; it needs ${n}: ${P}` +
                       ` for the assignments and PADs, then the query + lhs rhs =.`};
      }
      if (tokens[P] !== this.plus || tokens[n - 1] !== this.eq) {
        return {error: `The last four tokens must be the query + lhs rhs =; they are ${this.format(tokens.slice(P))}.`,
                at: tokens[P] !== this.plus ? P : n - 1};
      }
      const assigned = new Map();
      for (let i = 0; i < P; i++) {
        const t = tokens[i];
        if (t === this.pad) continue;
        if (this.isVariable(t)) {
          if (i + 1 >= P || !this.isNumber(tokens[i + 1])) {
            return {error: `Variable ${name(t)} at position ${i} is not followed by its value (a number): an` +
                           ` assignment is the two tokens "variable value".`, at: i};
          }
          if (assigned.has(t)) {
            return {error: `Variable ${name(t)} is assigned twice (positions ${assigned.get(t).at - 1} and ${i});` +
                           ` the variables of a sequence are distinct.`, at: i};
          }
          assigned.set(t, {value: tokens[i + 1], at: i + 1});
          i++;
          continue;
        }
        if (this.isNumber(t)) {
          return {error: `The number ${name(t)} at position ${i} follows no variable: a value comes right after its` +
                         ` variable.`, at: i};
        }
        return {error: `${name(t)} at position ${i}: the first ${P} tokens hold only assignments ("variable value")` +
                       ` and PAD.`, at: i};
      }
      const operand = (t, at, side) => {
        if (this.isNumber(t)) return {variable: -1, value: t, source: at};
        if (!this.isVariable(t)) {
          return {error: `The query's ${side} operand must be a number or a variable, not ${name(t)}.`, at};
        }
        if (!assigned.has(t)) {
          return {error: `The query uses ${name(t)}, which no assignment of the sequence gives a value.`, at};
        }
        return {variable: t - this.var0, value: assigned.get(t).value, source: assigned.get(t).at};
      };
      const lhs = operand(tokens[P + 1], P + 1, "left"), rhs = operand(tokens[P + 2], P + 2, "right");
      if (lhs.error || rhs.error) return lhs.error ? lhs : rhs;
      const variables = (lhs.variable >= 0 ? 1 : 0) + (rhs.variable >= 0 ? 1 : 0);
      const type = variables === 2 ? "2-var" : variables === 0 ? "0-var"
                 : lhs.variable >= 0 ? "1-var (left)" : "1-var (right)";
      const heldOutPair = !this.isTrainPair(lhs.value, rhs.value);
      const unseen = [lhs.variable >= 0 && this.rightOnly.has(lhs.variable) ? "left" : null,
                      rhs.variable >= 0 && this.leftOnly.has(rhs.variable) ? "right" : null].filter(Boolean);
      const notes = [];
      if (!assigned.size) notes.push("no assignment: every sequence of the task has at least one");
      if (variables === 2 && lhs.variable === rhs.variable) {
        notes.push("one variable on both sides: the task's 2-var queries use two distinct variables");
      }
      const pairUnseenIn2Var = variables === 2 && !heldOutPair && !this.inTwoVarTraining(lhs.value, rhs.value);
      if (pairUnseenIn2Var) notes.push("this pair is in no 2-var training query (its 2-var rows were not kept)");
      const query = {lhs, rhs, type, variables, heldOutPair, unseen, notes, answer: (lhs.value + rhs.value) % this.N,
                     assignments: assigned.size};
      query.pool = notes.length ? null : this.poolOf(query);
      return query;
    }

    poolOf(q) {  // the evaluation pool (book/protocol.md) this query's kind is drawn in; null for a kind no pool has
      let name = null;
      if (q.variables === 0) name = q.heldOutPair ? "0var_add_restricted" : "0var_train";
      else if (q.variables === 1) name = q.unseen.length ? (q.heldOutPair ? null : "1var_var_restricted")
                                                         : q.heldOutPair ? "1var_add_restricted" : "1var_train";
      else if (!q.unseen.length) name = q.heldOutPair ? "2var_add_restricted" : "2var_train";
      else name = q.heldOutPair ? null : `2var_var_restricted_${q.unseen.length}`;
      return name && (this.pools.find(p => p.name === name) || {name, label: name});
    }

    // a random sequence of a kind (KINDS), built as the task's generator builds them (data.build_sequences)
    draw(kind, random = Math.random) {
      const pick = list => list[Math.floor(random() * list.length)];
      const none = -1;
      let pair, lhsVar = none, rhsVar = none;
      const oneVar = (left, right, pairs) => {  // a variable on the left from `left` or on the right from `right`
        pair = pick(pairs);
        const choice = Math.floor(random() * (left.length + right.length));
        if (choice < left.length) lhsVar = left[choice]; else rhsVar = right[choice - left.length];
      };
      const twoVar = (varPairs, pairs) => { pair = pick(pairs); [lhsVar, rhsVar] = pick(varPairs); };
      const twoVarTrain = this.twoVarPairs.length ? this.twoVarPairs : this.trainPairs;
      if (kind === "0-var") pair = pick(this.trainPairs);
      else if (kind === "1-var-left") oneVar(this.leftVars, [], this.trainPairs);
      else if (kind === "1-var-right") oneVar([], this.rightVars, this.trainPairs);
      else if (kind === "2-var") twoVar(this.varPairs[0], twoVarTrain);
      else if (kind === "held-out-pair") {
        if (!this.heldOutPairs.length) return null;
        const type = Math.floor(random() * 3);
        if (type === 0) pair = pick(this.heldOutPairs);
        else if (type === 1) oneVar(this.leftVars, this.rightVars, this.heldOutPairs);
        else twoVar(this.varPairs[0], this.heldOutPairs);
      } else if (kind === "held-out-position") {
        const left = [...this.rightOnly], right = [...this.leftOnly];
        if (!left.length && !right.length) return null;
        if (random() < 0.5) oneVar(left, right, this.trainPairs);
        else twoVar([...this.varPairs[1], ...this.varPairs[2]], twoVarTrain);
      } else throw new Error(`unknown kind ${kind}`);
      return this.build(pair[0], pair[1], lhsVar, rhsVar, random);
    }

    build(lhsVal, rhsVal, lhsVar, rhsVar, random) {
      const slots = Math.min(this.prefix >> 1, this.nVars), P = this.prefix;
      const needed = (lhsVar >= 0 ? 1 : 0) + (rhsVar >= 0 ? 1 : 0);
      const count = Math.max(1 + Math.floor(random() * slots), needed);
      const shuffle = list => {
        for (let i = list.length - 1; i > 0; i--) {
          const j = Math.floor(random() * (i + 1));
          [list[i], list[j]] = [list[j], list[i]];
        }
        return list;
      };
      const query = [lhsVar, rhsVar].filter(v => v >= 0);
      const others = shuffle(Array.from({length: this.nVars}, (_, v) => v).filter(v => !query.includes(v)));
      const assignments = [...query, ...others].slice(0, count).map(v => [v, Math.floor(random() * this.N)]);
      if (lhsVar >= 0) assignments[0][1] = lhsVal;
      if (rhsVar >= 0) assignments[lhsVar >= 0 ? 1 : 0][1] = rhsVal;
      shuffle(assignments);
      const padsBefore = new Array(count + 1).fill(0);  // each PAD falls into one of the count + 1 gaps
      for (let k = 0; k < P - 2 * count; k++) padsBefore[Math.floor(random() * (count + 1))]++;
      const tokens = [];
      assignments.forEach(([v, value], i) => {
        for (let k = 0; k < padsBefore[i]; k++) tokens.push(this.pad);
        tokens.push(this.var0 + v, value);
      });
      for (let k = 0; k < padsBefore[count]; k++) tokens.push(this.pad);
      const operand = (variable, value) => (variable >= 0 ? this.var0 + variable : value);
      return [...tokens, this.plus, operand(lhsVar, lhsVal), operand(rhsVar, rhsVal), this.eq];
    }
  }

  // ---------------------------------------------------------------------------------------------- what a model does
  function seeded(seed) {  // a seeded generator (mulberry32): the same draws at every call
    let state = seed | 0;
    return () => {
      state = (state + 0x6D2B79F5) | 0;
      let t = Math.imul(state ^ (state >>> 15), 1 | state);
      t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
  }

  // What a model does on `count` random sequences of each kind (KINDS), drawn from a fixed seed, so that every model
  // and every checkpoint is read on the same sequences: how many it answers right, and on how many layer 2's attention
  // from `=` has its top two on the positions of the operands' values (the lookup finds them: progress measure 6's
  // test, book/protocol.md). {kind: {drawn, right, finds}}; a kind the task cannot draw is left out.
  function behaviour(model, kinds, count = 100, seed = 1) {
    const task = model.task, found = {};
    for (const kind of kinds) {
      const random = seeded(seed);
      let drawn = 0, right = 0, finds = 0;
      for (let k = 0; k < count; k++) {
        const tokens = task.draw(kind, random);
        if (!tokens) break;
        const query = task.check(tokens);
        if (query.error) continue;
        const out = model.run(tokens), n = out.n;
        drawn++;
        let best = 0;
        for (let c = 1; c < out.logits.length; c++) if (out.logits[c] > out.logits[best]) best = c;
        if (best === query.answer) right++;
        const row = Array.from({length: n}, (_, j) => out.pattern2[(n - 1) * n + j]);
        const top = Array.from(row.keys()).sort((a, b) => row[b] - row[a]).slice(0, 2).sort((a, b) => a - b);
        const values = [query.lhs.source, query.rhs.source].sort((a, b) => a - b);
        if (top[0] === values[0] && top[1] === values[1]) finds++;
      }
      if (drawn) found[kind] = {drawn, right, finds};
    }
    return found;
  }

  // ---------------------------------------------------------------------------------------------- the interface
  window.AssignAddExplorer = {
    manifest(m) {  // called by explorer/models.js
      registry.manifest = m;
      if (registry.onManifest) registry.onManifest(m);
    },
    weights(meta, data) {  // called by each model's file
      registry.raw[meta.id] = {meta, data};
      const done = registry["on:" + meta.id];
      if (done) done();
    },
    loadManifest,
    loadModel,
    probabilities,
    behaviour,
    seeded,
    KINDS,
    Task,
    // the logits at `=` of many sequences (flat tokens, `n` per sequence), as one flat array: the browser test's way
    // in; the page itself calls model.run
    async logits(id, flatTokens, n) {
      const model = await loadModel(id);
      const out = [];
      for (let at = 0; at < flatTokens.length; at += n) out.push(...model.run(flatTokens.slice(at, at + n)).logits);
      return out;
    },
  };
})();
