// The explorer's page (book/explorer.md) and its compact version in the circuits chapter: pick a model, type a
// sequence or draw one, and see the model's answer, both layers' attention, what the lookup moves to `=` and the
// addition MLP's neurons by frequency. The model runs in explorer_model.js; this file only draws. Each
// <div class="ae" data-mode="full|compact"> on a page becomes one explorer.
(function () {
  "use strict";
  const X = window.AssignAddExplorer;
  // What a checkpoint's line reads the model on (X.behaviour): the kinds whose answer needs the lookup.
  const LOOKUP_KINDS = ["1-var-left", "1-var-right", "2-var", "held-out-position"];
  const BEHAVIOUR_COUNT = 100;
  const rgb = hex => [1, 3, 5].map(at => parseInt(hex.slice(at, at + 2), 16)).join(", ");

  const el = (tag, attrs = {}, ...children) => {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs)) {
      if (key === "class") node.className = value;
      else if (key === "text") node.textContent = value;
      else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, value);
    }
    for (const child of children) if (child != null) node.append(child);
    return node;
  };
  const fmt = (x, digits = 2) => x.toFixed(digits);
  const signed = x => (Math.abs(x) < 0.05 ? "0.0" : (x > 0 ? "+" : "−") + Math.abs(x).toFixed(1));
  const thousands = n => n.toLocaleString("en-US");
  const strength = w => Math.pow(Math.max(0, Math.min(1, w)), 0.6);  // attention weight -> colour alpha

  // The state a link carries (#model=…&step=…&seq=…): {values, problems}; a part cut in the middle of an escape (a
  // link shortened by hand or by a mail program) is a problem, not an exception.
  function readHash(hash) {
    const values = {}, problems = [];
    for (const part of hash.replace(/^#/, "").split("&")) {
      const at = part.indexOf("=");
      if (at <= 0) continue;
      const key = part.slice(0, at), raw = part.slice(at + 1);
      try {
        values[key] = decodeURIComponent(raw);
      } catch (err) {
        problems.push(`its ${key} ("${raw.slice(0, 40)}") is cut short or not escaped as a link escapes it`);
      }
    }
    return {values, problems};
  }

  class Explorer {
    constructor(root) {
      this.root = root;
      this.compact = root.dataset.mode === "compact";
      this.focus = null;  // the position whose attention the page shows (hover or tap a token); null: `=`
      this.lastGood = null;
      root.textContent = "";
      root.append(this.status = el("p", {class: "ae-message", role: "status", text: "Loading the models…"}));
      X.loadManifest().then(m => {
        try {
          this.start(m);
        } catch (err) {  // never left on "Loading": say what went wrong
          this.say(`The explorer could not start: ${err.message || err}.`, "error");
          throw err;
        }
      }, err => this.say(String(err.message || err), "error"));
    }

    tell(text) {  // a notice that stays until the reader changes the model, the step or the sequence
      this.notice.textContent = text;
      this.notice.hidden = !text;
    }

    say(text, kind) {
      this.status.textContent = text;
      this.status.className = "ae-message" + (kind ? " ae-" + kind : "");
    }

    // ------------------------------------------------------------------------------------ the controls
    start(manifest) {
      this.manifest = manifest;
      if (!manifest.series.length) {
        this.say("This build of the book has no explorer models (their runs were not in the runs folder).", "error");
        return;
      }
      const link = this.compact ? {values: {}, problems: []} : readHash(location.hash);
      const hash = link.values;
      const root = this.root;
      root.textContent = "";
      for (const [name, colour] of Object.entries(manifest.colours || {})) root.style.setProperty(`--ae-${name}`, colour);
      this.layerRgb = [rgb((manifest.colours || {}).layer1 || "#888888"), rgb((manifest.colours || {}).layer2 || "#888888")];
      this.series = el("select", {class: "ae-series", "aria-label": "model",
                                  onchange: () => { this.tell(""); this.pickSeries(); }});
      const groups = new Map();
      for (const s of manifest.series) {
        if (!groups.has(s.group)) groups.set(s.group, el("optgroup", {label: s.group}));
        const text = s.label + (s.stops.length > 1 ? " (slider)" : "");
        groups.get(s.group).append(el("option", {value: s.id, text}));
      }
      groups.forEach(g => this.series.append(g));
      const wanted = hash.model || this.root.dataset.model;
      if (wanted && manifest.series.some(s => s.id === wanted)) this.series.value = wanted;
      else if (hash.model) link.problems.push(`it names the model "${hash.model.slice(0, 40)}", which this page does not have`);
      const chosen = manifest.series.find(s => s.id === this.series.value);
      const step = hash.step === undefined ? null : Number(hash.step);
      if (step !== null && !chosen.stops.some(stop => stop.step === step)) {
        link.problems.push(`step ${hash.step.slice(0, 12)} is not one of ${chosen.label}'s checkpoints`);
      }
      this.slider = el("input", {type: "range", class: "ae-slider", min: "0", step: "1", "aria-label": "training step",
                                 oninput: () => { this.tell(""); this.pickStop(); }});
      this.stepNote = el("span", {class: "ae-step"});
      this.steps = el("div", {class: "ae-row ae-steps"}, el("label", {}, "Training step ", this.slider), this.stepNote);
      this.modelNote = el("p", {class: "ae-note"});
      this.checkpointNote = el("p", {class: "ae-note ae-checkpoint"});
      this.notice = el("p", {class: "ae-notice", role: "status", hidden: ""});
      this.input = el("input", {type: "text", class: "ae-seq", spellcheck: "false", autocomplete: "off",
                                autocapitalize: "off", "aria-label": "sequence",
                                oninput: () => { this.tell(""); this.update(); }});
      const draws = el("div", {class: "ae-draws"}, el("span", {class: "ae-muted", text: "Draw a random one: "}));
      for (const [kind, label] of Object.entries(X.KINDS)) {
        draws.append(el("button", {type: "button", "data-kind": kind, text: label,
                                   onclick: () => { this.tell(""); this.draw(kind); }}));
      }
      this.status = el("p", {class: "ae-message", role: "status"});
      this.chips = el("div", {class: "ae-chips", onmouseleave: () => this.setFocus(null)});
      this.result = el("div", {class: "ae-result"});
      root.append(this.notice, el("div", {class: "ae-row"}, el("label", {}, "Model ", this.series)), this.steps,
                  this.modelNote, this.compact ? null : this.checkpointNote,
                  el("label", {class: "ae-seq-label"}, "Sequence", this.input), draws, this.status, this.chips,
                  this.result);
      if (this.compact) {  // the link to the explorer in the text just before: it opens the sequence shown here
        let node = this.root.previousElementSibling;
        for (let k = 0; node && k < 4 && !this.link; k++, node = node.previousElementSibling) {
          this.link = node.querySelector("a[href*='explorer']");
        }
      }
      if (link.problems.length) {
        const stop = chosen.stops.find(st => st.step === step) || chosen.stops[chosen.stops.length - 1];
        this.tell(`This page's link could not be followed in full: ${link.problems.join("; ")}. It shows` +
                  ` ${chosen.label} at step ${thousands(stop.step)}` +
                  (hash.seq !== undefined ? " with the link's sequence." : " with an example sequence."));
      }
      this.pickSeries(step, hash.seq === undefined ? null : hash.seq);
    }

    currentSeries() { return this.manifest.series.find(s => s.id === this.series.value); }

    pickSeries(step = null, sequence = null) {
      const s = this.currentSeries();
      this.steps.hidden = s.stops.length < 2;
      this.slider.max = String(s.stops.length - 1);
      const at = step === null ? -1 : s.stops.findIndex(stop => stop.step === step);
      this.slider.value = String(at >= 0 ? at : s.stops.length - 1);
      this.pickStop(sequence);
    }

    pickStop(sequence = null) {
      const s = this.currentSeries(), stop = s.stops[Number(this.slider.value)];
      this.stop = stop;
      this.stepNote.textContent = thousands(stop.step) + (stop.final ? " (final)" : "") + this.phaseText(s, stop.step);
      const acc = stop.accuracy, pools = this.manifest.pools;
      const mean = names => names.reduce((t, n) => t + acc[n], 0) / names.length;
      const restricted = pools.map(p => p.name).filter(n => /var_restricted/.test(n));
      const entry = this.manifest.models[stop.model];
      const composed = s.state === "composed";
      const state = s.stops.length > 1 ? `a run that ${composed ? "composed" : "never composed"}`
                                       : composed ? "composed" : "stuck: its lookup never formed";
      const parts = [`${s.label} (${state}), at step ${thousands(stop.step)}`];
      if (acc && acc["1var_train"] !== undefined) {
        parts.push(`accuracy: 0-var train ${fmt(acc["0var_train"])}, 1-var train ${fmt(acc["1var_train"])},` +
                   ` var-restricted pools ${fmt(mean(restricted))}`);
      }
      parts.push(`weights ${Math.round(entry.bytes / 1000)} kB, logits within` +
                 ` ${entry.logit_error.toExponential(0)} of PyTorch's`);
      this.modelNote.textContent = parts.join(" · ");
      this.say("Loading the weights…");
      this.checkpointNote.textContent = "";
      X.loadModel(stop.model).then(model => {
        if (this.stop !== stop) return;  // the reader moved on meanwhile
        this.model = model;
        if (sequence !== null) this.input.value = sequence;
        else if (!this.input.value) this.input.value = model.task.example();
        this.update();
        if (!this.compact) setTimeout(() => { if (this.stop === stop) this.describeCheckpoint(s, stop, model); }, 0);
      }, err => this.say(String(err.message || err), "error"));
    }

    // What the model does at this checkpoint, read from its own output (never from what the text expects of it): on
    // the same random sequences of each kind that needs the lookup, how many it answers right and on how many layer 2
    // finds the operands' values.
    describeCheckpoint(series, stop, model) {
      const key = stop.model;
      this.behaviours = this.behaviours || {};
      const found = this.behaviours[key] || (this.behaviours[key] = X.behaviour(model, LOOKUP_KINDS, BEHAVIOUR_COUNT));
      const kinds = LOOKUP_KINDS.filter(kind => found[kind]);
      if (!kinds.length) { this.checkpointNote.textContent = ""; return; }
      const where = series.stops.length > 1 ? `At step ${thousands(stop.step)}` : "This model";
      const parts = kinds.map(kind => `${X.KINDS[kind]} ${found[kind].right} (${found[kind].finds})`);
      this.checkpointNote.textContent = `${where}, on ${BEHAVIOUR_COUNT} random sequences of each kind (the same at` +
        ` every step): the right answers, and in brackets how often layer 2's attention from = has its top two on the` +
        ` operands' values (the lookup finds them): ${parts.join(" · ")}.`;
      this.checkpointNote.dataset.behaviour = JSON.stringify(found);
    }

    phaseText(series, step) {
      const {jump, refinement} = series.phases || {};
      if (!jump) return "";
      if (step < jump) return ` · before the jump (${thousands(jump)})`;
      if (refinement && step < refinement) {
        return ` · after the jump, before the final rise (${thousands(refinement)})`;
      }
      return refinement ? " · after the final rise" : " · after the jump";
    }

    draw(kind) {
      if (!this.model) return;
      const tokens = this.model.task.draw(kind);
      if (!tokens) { this.say(`This model's task has no ${X.KINDS[kind]} to draw.`, "note"); return; }
      this.input.value = this.model.task.format(tokens);
      this.update();
    }

    setFocus(position) {
      if (this.focus === position) return;
      this.focus = position;
      if (this.lastGood) this.drawFocus();
    }

    // ------------------------------------------------------------------------------------ one sequence
    update() {
      if (!this.model) return;
      const task = this.model.task, parsed = task.parse(this.input.value);
      const checked = parsed.error ? parsed : task.check(parsed.tokens);
      if (checked.error) {  // the message, the tokens with the one to blame in red, the last answer dimmed
        this.say(checked.error, "error");
        this.drawChips(parsed.tokens || [], null, parsed.words);
        if (checked.at !== undefined && this.chipNodes[checked.at]) this.chipNodes[checked.at].classList.add("ae-bad");
        this.result.classList.add("ae-stale");
        return;
      }
      this.result.classList.remove("ae-stale");
      const out = this.model.run(parsed.tokens);
      this.lastGood = {tokens: parsed.tokens, query: checked, out};
      this.say(checked.notes.length ? "Outside the task, run anyway: " + checked.notes.join("; ") + "." : "",
               checked.notes.length ? "note" : "");
      this.drawChips(parsed.tokens, checked);
      this.drawResult();
      this.drawFocus();
      this.remember();
    }

    remember() {  // the state in the address (a link to it reopens it); the compact version's link carries it
      const hash = `#model=${encodeURIComponent(this.series.value)}&step=${this.stop.step}` +
                   `&seq=${encodeURIComponent(this.model.task.format(this.lastGood.tokens))}`;
      if (this.compact) { if (this.link) this.link.href = this.link.href.replace(/#.*$/, "") + hash; }
      else if (location.hash !== hash) history.replaceState(null, "", hash);
    }

    drawChips(tokens, query, words = null) {  // words: the text's words, where it did not parse into tokens
      const task = this.model.task;
      this.chips.textContent = "";
      this.chipNodes = (words || tokens).map((word, i) => {
        const t = words ? task.ids.get(/^pad$/i.test(word) ? "PAD" : word) : word;
        const kind = t === task.pad ? "ae-pad" : task.isVariable(t) ? "ae-var" : task.isNumber(t) ? "ae-num" : "ae-op";
        const classes = ["ae-chip", kind];
        if (query && (i === query.lhs.source || i === query.rhs.source)) classes.push("ae-source");
        const bars = el("span", {class: "ae-bars"}, el("i", {class: "ae-bar1"}), el("i", {class: "ae-bar2"}));
        const chip = el("span", {class: classes.join(" "), tabindex: "0", title: `position ${i}`},
                        el("small", {text: String(i)}), el("b", {text: t === undefined ? word : task.name(t)}), bars);
        chip.addEventListener("mouseenter", () => this.setFocus(i));
        chip.addEventListener("focus", () => this.setFocus(i));
        chip.addEventListener("click", () => this.setFocus(i));
        this.chips.append(chip);
        return chip;
      });
    }

    drawResult() {
      const {query, out} = this.lastGood, task = this.model.task;
      const probs = X.probabilities(out.logits);
      const order = Array.from(probs.keys()).sort((a, b) => probs[b] - probs[a]);
      const answer = order[0], right = answer === query.answer;
      const name = t => task.name(t);
      const operand = (o, t) => (o.variable >= 0 ? `${name(t)} = ${o.value}` : String(o.value));
      const tokens = this.lastGood.tokens, P = task.prefix;
      this.result.textContent = "";
      const tags = [query.type, query.heldOutPair ? "held-out pair" : "training pair"];
      if (query.unseen.length) tags.push(`variable in a held-out position (${query.unseen.join(" and ")})`);
      const answerLine = el("p", {class: "ae-answer"},
        el("span", {class: "ae-big " + (right ? "ae-right" : "ae-wrong"), text: String(answer)}),
        ` the model's answer (p = ${fmt(probs[answer], 3)}); the task's: (${operand(query.lhs, tokens[P + 1])}) +` +
        ` (${operand(query.rhs, tokens[P + 2])}) mod ${task.N} = ${query.answer} ${right ? "✓" : "✗"}`);
      const pool = query.pool && el("span", {class: "ae-muted", text: ` as in the pool “${query.pool.label}”`});
      const tagLine = el("p", {class: "ae-tags"}, ...tags.map(t => el("span", {class: "ae-tag", text: t})), pool);
      const top = el("div", {class: "ae-top"});
      for (const c of order.slice(0, 5)) {
        top.append(el("span", {class: "ae-top-label" + (c === query.answer ? " ae-right" : ""), text: String(c)}),
                   el("span", {class: "ae-top-bar"}, el("i", {style: `width:${(100 * probs[c]).toFixed(1)}%`})),
                   el("span", {class: "ae-top-p", text: fmt(probs[c], 3)}));
      }
      this.result.append(answerLine, tagLine, el("h4", {text: "Top 5"}), top);
      this.result.append(el("h4", {text: "What the lookup moves to ="}), this.lookupLine());
      const c = query.answer, fromNeurons = out.fromNeurons[c], direct = out.direct[c];
      if (!this.compact) {
        this.maps = [0, 1].map(layer => this.heatmap(layer));
        this.focusLine = el("p", {class: "ae-focus"});
        this.result.append(el("h4", {text: "Attention (hover or tap a token)"}),
                           el("div", {class: "ae-maps"}, ...this.maps.map(m => m.figure)), this.focusLine);
        this.result.append(el("h4", {text: "The addition MLP's neurons, by key frequency"}),
          el("p", {class: "ae-note", text: `The logit of the task's answer ${c}: ${fmt(direct + fromNeurons, 1)} =` +
                   ` ${fmt(direct, 1)} read from the residual stream + ${fmt(fromNeurons, 1)} from the neurons.`}),
          this.neuronGroups(c));
      } else {
        this.focusLine = el("p", {class: "ae-focus"});
        this.result.append(this.focusLine);
      }
    }

    lookupLine() {  // the layer-2 pattern from `=`: where it reads, the operands' values first
      const {query, out, tokens} = this.lastGood, task = this.model.task, n = out.n;
      const row = Array.from({length: n}, (_, j) => out.pattern2[(n - 1) * n + j]);
      const role = j => {
        const parts = [];
        for (const [o, side] of [[query.lhs, "left"], [query.rhs, "right"]]) {
          if (o.source !== j) continue;
          parts.push(o.variable >= 0 ? `the value of ${task.name(task.var0 + o.variable)}` : `the ${side} operand`);
        }
        return parts.join(", ");
      };
      const top = Array.from(row.keys()).sort((a, b) => row[b] - row[a]).slice(0, 3);
      const shown = top.filter(j => row[j] >= 0.02);
      const rest = 1 - shown.reduce((t, j) => t + row[j], 0);
      const items = shown.map(j => `${task.name(tokens[j])} at ${j}` + (role(j) ? ` (${role(j)})` : "") +
                                   `: ${fmt(row[j])}`);
      const operands = [query.lhs, query.rhs].map(o => row[o.source]);
      const reads = items.join(" · ") + (rest > 0.005 ? ` · the rest ${fmt(rest)}` : "");
      return el("p", {class: "ae-lookup"}, `= reads ${reads}. On the operands' values (${query.lhs.value} and` +
                                           ` ${query.rhs.value}): ${fmt(operands[0])} and ${fmt(operands[1])}.`);
    }

    heatmap(layer) {
      const {out, tokens} = this.lastGood, task = this.model.task, n = out.n;
      const pattern = layer ? out.pattern2 : out.pattern1;
      const grid = el("div", {class: "ae-grid", style: `grid-template-columns: 2.4em repeat(${n}, minmax(0, 1fr))`});
      const label = t => (t === task.pad ? "·" : task.name(t));
      grid.append(el("span", {class: "ae-corner", text: "q\\k"}));
      const cols = tokens.map((t, j) => el("span", {class: "ae-col", text: label(t), title: `${task.name(t)} (${j})`}));
      grid.append(...cols);
      const rows = [], cells = [];
      for (let i = 0; i < n; i++) {
        const head = el("span", {class: "ae-rowhead", text: label(tokens[i]), title: `${task.name(tokens[i])} (${i})`});
        head.addEventListener("mouseenter", () => this.setFocus(i));
        head.addEventListener("click", () => this.setFocus(i));
        grid.append(head);
        rows.push(head);
        cells.push([]);
        for (let j = 0; j < n; j++) {
          const w = j <= i ? pattern[i * n + j] : 0;
          const title = j <= i ? `${task.name(tokens[i])} (${i}) → ${task.name(tokens[j])} (${j}): ${fmt(w, 3)}` : "";
          const cell = el("span", {class: "ae-cell" + (j > i ? " ae-masked" : ""), title});
          if (j <= i) cell.style.background = `rgba(${this.layerRgb[layer]}, ${strength(w).toFixed(3)})`;
          cell.addEventListener("mouseenter", () => this.setFocus(i));
          grid.append(cell);
          cells[i].push(cell);
        }
      }
      const role = layer ? "the lookup (associative memory)" : "the previous-token head";
      const caption = el("figcaption", {text: `Layer ${layer + 1}: ${role}; rows attend to columns`});
      const figure = el("figure", {class: "ae-map"}, caption, grid);
      return {figure, rows, cols, cells};
    }

    drawFocus() {
      const {out, tokens} = this.lastGood, task = this.model.task, n = out.n;
      const i = this.focus === null ? n - 1 : this.focus;
      (this.chipNodes || []).forEach((chip, j) => {
        chip.classList.toggle("ae-focused", j === i);
        const [b1, b2] = chip.querySelectorAll(".ae-bars i");
        const w1 = j <= i ? out.pattern1[i * n + j] : 0, w2 = j <= i ? out.pattern2[i * n + j] : 0;
        b1.style.width = `${(100 * w1).toFixed(1)}%`;
        b2.style.width = `${(100 * w2).toFixed(1)}%`;
        chip.title = `position ${j}; attention from ${task.name(tokens[i])} (${i}):` +
                     ` layer 1 ${fmt(w1)}, layer 2 ${fmt(w2)}`;
      });
      for (const map of this.maps && !this.compact ? this.maps : []) {
        map.rows.forEach((r, k) => r.classList.toggle("ae-on", k === i));
        map.cols.forEach((c, k) => c.classList.toggle("ae-on", k === i));
        map.cells.forEach((row, k) => row.forEach((cell, j) => cell.classList.toggle("ae-on", k === i || j === i)));
      }
      const describe = layer => {
        const pattern = layer ? out.pattern2 : out.pattern1;
        const to = Array.from({length: i + 1}, (_, j) => j).sort((a, b) => pattern[i * n + b] - pattern[i * n + a])
          .slice(0, 2).map(j => `${task.name(tokens[j])} (${j}) ${fmt(pattern[i * n + j])}`);
        const from = Array.from({length: n - i - 1}, (_, k) => i + 1 + k)
          .sort((a, b) => pattern[b * n + i] - pattern[a * n + i]).slice(0, 2).filter(k => pattern[k * n + i] >= 0.05)
          .map(k => `${task.name(tokens[k])} (${k}) ${fmt(pattern[k * n + i])}`);
        const read = from.length ? ` and is read by ${from.join(", ")}` : "";
        return `layer ${layer + 1} attends to ${to.join(", ")}${read}`;
      };
      this.focusLine.textContent = `${task.name(tokens[i])} at position ${i}: ${describe(0)}; ${describe(1)}.`;
      if (this.compact) {  // the bars' key, in the bars' own colours
        const key = layer => el("span", {class: `ae-key ae-key${layer}`, text: `layer ${layer}`});
        this.focusLine.append(" (The bars under the tokens: ", key(1), ", ", key(2), ".)");
      }
    }

    neuronGroups(c) {  // active neurons grouped by their best frequency; what each group adds to the logit of c
      const {out} = this.lastGood, info = this.model.meta.neurons, model = this.model;
      const groups = new Map();
      let weak = 0, weakAdds = 0;
      const peak = Math.max(1e-12, ...out.post);
      info.k.forEach((k, index) => {
        const adds = out.post[index] * model.neuronEffect(index, c);
        if (!info.active[index]) { weak++; weakAdds += adds; return; }
        const key = info.r2[index] >= info.fit_threshold ? `k = ${k}` : "no single frequency";
        if (!groups.has(key)) groups.set(key, {key, neurons: [], adds: 0, firing: 0});
        const g = groups.get(key);
        g.neurons.push(index);
        g.adds += adds;
        if (out.post[index] > 0) g.firing++;
      });
      const box = el("div", {class: "ae-neurons"});
      const sorted = [...groups.values()].sort((a, b) => Math.abs(b.adds) - Math.abs(a.adds));
      for (const g of sorted) {
        const squares = el("span", {class: "ae-squares"});
        for (const index of g.neurons) {
          const a = out.post[index] / peak;
          const adds = signed(out.post[index] * model.neuronEffect(index, c));
          const title = `neuron ${index}: activation ${fmt(out.post[index])}, fit ${fmt(info.r2[index])}, adds ${adds}`;
          squares.append(el("i", {style: `opacity:${(0.08 + 0.92 * a).toFixed(3)}`, title}));
        }
        box.append(el("span", {class: "ae-group", text: g.key}),
                   el("span", {class: "ae-group-n", text: `${g.firing} of ${g.neurons.length} firing`}), squares,
                   el("span", {class: "ae-group-adds", text: signed(g.adds)}));
      }
      const note = `Each square is a neuron (the stronger its colour, the more active it is at =); the number is` +
        ` what the group adds to the logit of ${c}. Neurons are grouped by the frequency that best explains their` +
        ` input over all operand pairs, where it explains at least ${Math.round(100 * info.fit_threshold)} %; the` +
        ` ${weak} weak neurons (each under 5 % of the strongest one's effect on the logits) add ${signed(weakAdds)}.`;
      return el("div", {}, box, el("p", {class: "ae-note", text: note}));
    }
  }

  const start = () => document.querySelectorAll("div.ae[data-mode]").forEach(root => new Explorer(root));
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start); else start();
})();
