// Fits each figure's text to the width the page draws it at (a figure is drawn for a laptop and shrinks to the
// column on a phone): a legend that is cut or sits on an axis's labels moves below them, horizontal, and a legend
// still cut gets a smaller font, then its long entries wrap; an annotation (a subplot's title, a line's label) or
// an axis title that is cut or overlaps another first gets a smaller font, then wraps, then moves aside; an
// annotation on a tick label steps off it; tick labels that overlap each other get a smaller font, then only every
// other tick keeps its label; a grid of panels too narrow to read (a phone) becomes one column. On a narrow screen the side margins
// shrink to what the axes need (plotly's automargin), so a panel gets the column's width; on a touch screen a drag
// scrolls the page instead of zooming (dragmode off); the toolbar (modebar) never sits on a title or a label (the
// top margin grows under it); the figure's box grows with the figure, so no figure scrolls inside a box.
// When a figure's text has been fitted (or cannot be within a few passes), its div gets data-fitted="1".
(() => {
  const MIN_FONT = 9, PASSES = 10, MIN_PANEL = 170, PANEL_GAP = 100, NARROW = 600, SIDE_MARGIN = 8;
  const touch = () => window.matchMedia("(pointer: coarse)").matches;

  const overlap = (a, b) => Math.max(0, Math.min(a.right, b.right) - Math.max(a.left, b.left)) *
                            Math.max(0, Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top)) > 4;

  const frameOf = gd => gd.querySelector(".main-svg").getBoundingClientRect();

  function boxes(gd, selector, frame) {  // boxes relative to the figure (`frame`: its main svg), visible ones only
    return Array.from(gd.querySelectorAll(selector)).map(el => {
      const b = el.getBoundingClientRect();
      return {el, left: b.left - frame.left, right: b.right - frame.left, top: b.top - frame.top,
              bottom: b.bottom - frame.top, width: b.width, height: b.height};
    }).filter(b => b.width > 0 && b.height > 0);
  }

  function isCut(frame, box) {
    return box.left < -1 || box.right > frame.width + 1 || box.top < -1 || box.bottom > frame.height + 1;
  }

  function wrapped(text) {  // its longest line broken at the space nearest that line's middle; null: no space left
    if (!text) return null;
    const lines = String(text).split("<br>");
    const k = lines.reduce((best, line, i) => line.length > lines[best].length ? i : best, 0);
    const line = lines[k], spaces = [...line.matchAll(/ /g)].map(m => m.index);
    if (!spaces.length || lines.length >= 4) return null;
    const middle = spaces.reduce((a, b) => Math.abs(b - line.length / 2) < Math.abs(a - line.length / 2) ? b : a);
    lines.splice(k, 1, line.slice(0, middle), line.slice(middle + 1));
    return lines.join("<br>");
  }

  // The next change for one piece of text: a smaller font, then a wrapped line; null when neither is left.
  function shrinkOrWrap(update, prefix, spec, fallbackSize) {
    const size = (spec.font && spec.font.size) || fallbackSize;
    if (size > MIN_FONT) { update[prefix + ".font.size"] = Math.max(MIN_FONT, Math.floor(size * 0.85)); return true; }
    const text = wrapped(spec.text);
    if (text) { update[prefix + ".text"] = text; return true; }
    return false;
  }


  // The figure's panels (cartesian subplots) with their axes and domains, and whether panels side by side are
  // narrower than MIN_PANEL pixels.
  function panelsOf(gd) {
    const layout = gd._fullLayout, size = layout._size;
    const subplots = (layout._subplots && layout._subplots.cartesian) || [];
    const panels = subplots.map(name => {
      const [x, y] = name.match(/^(x\d*)(y\d*)$/).slice(1);
      const xa = layout["xaxis" + x.slice(1)], ya = layout["yaxis" + y.slice(1)];
      return {x, y, xa, ya, xd: xa.domain.slice(), yd: ya.domain.slice()};
    });
    const columns = new Set(panels.map(p => p.xd.join()));
    const narrowest = Math.min(...panels.map(p => (p.xd[1] - p.xd[0]) * size.w));
    return {panels, squeezed: panels.length > 1 && columns.size > 1 && narrowest < MIN_PANEL};
  }

  // Panels side by side squeezed below MIN_PANEL pixels each even with narrow margins (a phone): one column, each
  // panel the figure's width and its own tick labels, its title and colour bar moved with it. Returns the colour
  // bars' new places ([] when there are none), or null when the figure needs no reflow.
  function reflowPlan(gd, update) {
    const layout = gd._fullLayout, size = layout._size, {panels, squeezed} = panelsOf(gd);
    if (gd._fitReflowed || !squeezed) return null;
    gd._fitReflowed = true;
    panels.sort((a, b) => (b.yd[1] - a.yd[1]) || (a.xd[0] - b.xd[0]));
    const traces = gd._fullData;
    const withBar = panels.map(p => traces.filter(t => t.xaxis === p.x && t.yaxis === p.y && t.showscale));
    const right = withBar.some(b => b.length) ? 0.8 : 1;
    const panelHeight = Math.min(320, Math.max(200, size.w * right * 0.85));
    const plotHeight = panels.length * panelHeight + (panels.length - 1) * PANEL_GAP;
    const titles = (layout.annotations || []).map((a, i) => ({a, i})).filter(({a}) => a.xref === "paper" && a.yref === "paper");
    const colorbars = [];
    panels.forEach((p, k) => {
      const top = 1 - k * (panelHeight + PANEL_GAP) / plotHeight, bottom = top - panelHeight / plotHeight;
      update[`xaxis${p.x.slice(1)}.domain`] = [0, right];
      update[`yaxis${p.y.slice(1)}.domain`] = [bottom, top];
      // a grid with shared axes labels only its outer panels' ticks: alone in its row, each panel labels its own
      update[`xaxis${p.x.slice(1)}.showticklabels`] = true;
      update[`yaxis${p.y.slice(1)}.showticklabels`] = true;
      const centre = (p.xd[0] + p.xd[1]) / 2;
      for (const {a, i} of titles) {  // the panel's subplot title: centred over its old domain, at its top
        if (Math.abs(a.x - centre) < 0.02 && Math.abs(a.y - p.yd[1]) < 0.05) {
          update[`annotations[${i}].x`] = right / 2;
          update[`annotations[${i}].y`] = top + (a.y - p.yd[1]);
        }
      }
      for (const t of withBar[k]) colorbars.push({index: t.index, y: (top + bottom) / 2, len: panelHeight / plotHeight});
    });
    update.height = layout.height - size.h + plotHeight;
    return colorbars;
  }

  function legendPlan(gd, frame, update, renames) {
    const layout = gd._fullLayout, legend = gd.querySelector(".legend");
    if (!legend || !layout.showlegend) return;
    const [box] = boxes(gd, ".legend", frame);
    if (!box) return;
    const xText = boxes(gd, ".xaxislayer-above text, [class^='g-x'][class$='title'] text", frame);
    const yTicks = boxes(gd, ".yaxislayer-above text", frame);
    const others = boxes(gd, ".colorbar, .annotation", frame);
    const clash = [...xText, ...yTicks, ...others].some(t => overlap(t, box));
    if (layout.legend.orientation === "h" && layout.legend.yanchor === "top" && layout.legend.y < 0 && !clash) {
      if (isCut(frame, box)) legendTextPlan(gd, frame, box, update, renames);  // below the plot already, too wide
      return;
    }
    if (!isCut(frame, box) && !clash) return;
    const size = layout._size, plotBottom = size.t + size.h;
    const lowest = Math.max(plotBottom, ...xText.map(t => t.bottom));
    gd._fitPlotHeight = gd._fitPlotHeight || size.h;
    Object.assign(update, {"legend.orientation": "h", "legend.x": 0, "legend.xanchor": "left",
                           "legend.y": -(lowest + 6 - plotBottom) / size.h, "legend.yanchor": "top"});
    // Plotly makes room for the legend by shrinking the plot: give the figure that height back instead
    const lost = gd._fitPlotHeight - size.h;
    const needed = Math.max(lost, box.bottom - layout.height + 4);
    if (needed > 2) update.height = layout.height + needed;
  }

  // A legend below the plot that is still cut: a taller figure where it runs past the bottom; else a smaller font
  // first, then the entries that end past the figure's right edge wrap (their trace names, in `renames`). `box`:
  // the legend's box, as legendPlan measured it this pass.
  function legendTextPlan(gd, frame, box, update, renames) {
    const layout = gd._fullLayout, size = (layout.legend.font && layout.legend.font.size) || 12;
    if (box.bottom > frame.height - 1) { update.height = layout.height + box.bottom - frame.height + 6; return; }
    if (size > MIN_FONT + 1) { update["legend.font.size"] = Math.max(MIN_FONT + 1, Math.floor(size * 0.85)); return; }
    for (const item of gd.querySelectorAll(".legend .traces")) {
      const b = item.getBoundingClientRect(), trace = item.__data__ && item.__data__[0] && item.__data__[0].trace;
      if (!trace || b.right - frame.left <= frame.width + 1) continue;
      const name = wrapped(trace.name);
      if (name) renames.push({index: trace.index, name});
    }
    if (renames.length && box.bottom + 30 > layout.height) update.height = layout.height + 30;  // room for lines
  }

  function annotationPlan(gd, frame, update) {
    const layout = gd._fullLayout, specs = layout.annotations || [];
    const notes = boxes(gd, ".annotation", frame).filter(b => b.el.dataset.index !== undefined);
    const ticks = boxes(gd, "g[class$='tick'] > text", frame).filter(t => !t.el.closest(".colorbar"));
    const changed = new Set();
    notes.forEach((a, i) => {
      const spec = specs[+a.el.dataset.index];
      if (!spec || changed.has(a.el.dataset.index)) return;
      const hit = notes.slice(i + 1).find(b => overlap(a, b));
      const prefix = `annotations[${a.el.dataset.index}]`;
      const tick = ticks.find(t => overlap(a, t));
      if (tick && !hit && !isCut(frame, a)) {  // step up off the tick label (a subplot title, a line's label)
        const up = a.bottom - tick.top + 2;
        update[prefix + ".yshift"] = (spec.yshift || 0) + up;
        if (a.top - up < 0) update["margin.t"] = layout.margin.t + (up - a.top) + 2;  // room above, if needed
        changed.add(a.el.dataset.index);
        return;
      }
      if (!isCut(frame, a) && !hit) return;
      if (shrinkOrWrap(update, prefix, spec, 12)) { changed.add(a.el.dataset.index); return; }
      if (a.right > frame.width + 1) update[prefix + ".xshift"] = (spec.xshift || 0) - (a.right - frame.width + 2);
      else if (a.left < -1) update[prefix + ".xshift"] = (spec.xshift || 0) - a.left + 2;
      else if (hit) {  // the later one steps away by the overlap (labels of lines that sit close together):
        const other = specs[+hit.el.dataset.index];  // down from the top half of the plot, up from the bottom half
        const up = other.yref === "paper" && other.y < 0.5;
        const step = up ? hit.bottom - a.top + 2 : -(a.bottom - hit.top + 2);
        update[`annotations[${hit.el.dataset.index}].yshift`] = (other.yshift || 0) + step;
        changed.add(hit.el.dataset.index);
      }
      changed.add(a.el.dataset.index);
    });
  }

  function axisTitlePlan(gd, frame, update) {
    const layout = gd._fullLayout;
    for (const title of boxes(gd, "[class^='g-x'][class$='title'], [class^='g-y'][class$='title']", frame)) {
      const name = title.el.getAttribute("class").slice(2, -5);  // g-x2title -> x2
      const axis = layout[name[0] + "axis" + name.slice(1)];
      if (!axis || !axis.title || !axis.title.text) continue;
      const legendClash = boxes(gd, ".legend", frame).some(l => overlap(l, title));
      if (isCut(frame, title) && !legendClash) shrinkOrWrap(update, `${name[0]}axis${name.slice(1)}.title`, axis.title, 14);
    }
  }

  // Tick labels of one axis that overlap each other (59 categories on a phone): a smaller font, then a label on every
  // other tick (plotly's ticklabelstep; every other tick value where the figure lists them). Labels turned by an
  // angle other than 0 or 90 degrees are left to plotly (their boxes always overlap).
  const slanted = el => { const m = /rotate\((-?[\d.]+)/.exec(el.getAttribute("transform") || "");
                          return m && Math.abs(parseFloat(m[1])) % 90 > 0.5; };

  function tickPlan(gd, frame, update) {
    const layout = gd._fullLayout;
    for (const key of Object.keys(layout).filter(k => /^[xy]axis\d*$/.test(k))) {
      const axis = layout[key], id = key[0] + key.slice(5);
      const labels = boxes(gd, `.${id}tick > text`, frame).filter(b => !slanted(b.el) && !b.el.closest(".colorbar"))
        .sort((a, b) => key[0] === "x" ? a.left - b.left : a.top - b.top);
      if (!labels.some((b, i) => i && overlap(labels[i - 1], b))) continue;
      const size = (axis.tickfont && axis.tickfont.size) || 12;
      if (size > MIN_FONT) update[`${key}.tickfont.size`] = Math.max(MIN_FONT, Math.floor(size * 0.85));
      else if (axis.tickmode === "array" && axis.tickvals && axis.tickvals.length > 2) {
        update[`${key}.tickvals`] = axis.tickvals.filter((_, i) => i % 2 === 0);
        if (axis.ticktext) update[`${key}.ticktext`] = axis.ticktext.filter((_, i) => i % 2 === 0);
      } else update[`${key}.ticklabelstep`] = (axis.ticklabelstep || 1) * 2;
    }
  }

  // A figure drawn narrower than NARROW pixels, or whose panels side by side are squeezed: side margins only as wide
  // as the axes' labels and titles need (on a laptop that is often room enough to keep a grid of panels a grid).
  function narrowPlan(gd, update) {
    const layout = gd._fullLayout;
    if (gd._fitNarrow || (layout.width >= NARROW && !panelsOf(gd).squeezed)) return false;
    gd._fitNarrow = true;
    for (const key of Object.keys(layout).filter(k => /^[xy]axis\d*$/.test(k))) update[`${key}.automargin`] = true;
    if (layout.margin.l > SIDE_MARGIN) update["margin.l"] = SIDE_MARGIN;
    if (layout.margin.r > SIDE_MARGIN) update["margin.r"] = SIDE_MARGIN;
    return true;
  }

  // On a touch screen a drag over a figure scrolls the page: no drag-zoom (a tap still shows a value).
  function touchPlan(gd, update) {
    if (touch() && gd._fullLayout.dragmode !== false) update.dragmode = false;
  }

  // The toolbar floats over the figure's top right corner: where it would cover a title, a legend, a colour bar or
  // a label, the top margin (and the figure) grows by the overlap, moving everything below it.
  function modebarPlan(gd, frame, update) {
    const [bar] = boxes(gd, ".modebar", frame);
    if (!bar) return;
    const labels = boxes(gd, ".g-gtitle, .annotation, .legend, .colorbar, [class^='g-x'][class$='title'], " +
                         "[class^='g-y'][class$='title'], g[class$='tick'] > text, .slider-container", frame);
    const hits = labels.filter(l => overlap(bar, l));
    if (!hits.length) return;
    const layout = gd._fullLayout, need = bar.bottom - Math.min(...hits.map(h => h.top)) + 2;
    update["margin.t"] = Math.max(update["margin.t"] || 0, layout.margin.t + need);
    update.height = Math.max(update.height || 0, layout.height + need);
  }

  // The figure's div, and the box plotly's HTML wraps it in (a div of the figure's first height), as tall as the
  // figure is now: the page makes room for a figure that grew, nothing scrolls or hides inside its box.
  function syncBox(gd) {
    const height = `${Math.round(gd._fullLayout.height)}px`, wrap = gd.parentElement;
    if (gd.style.height !== height) gd.style.height = height;
    if (wrap && wrap.style.height && wrap.children.length <= 2 && wrap.style.height !== height) wrap.style.height = height;
  }

  async function fit(gd) {
    if (gd._fitting || !gd._fullLayout || !gd.querySelector(".main-svg")) return;
    gd._fitting = true;
    try {  // a bounded number of changes per width, so a figure whose text cannot fit stops trying
      for (gd._fitPasses = gd._fitPasses || 0; gd._fitPasses < PASSES; gd._fitPasses++) {
        const update = {}, renames = [], frame = frameOf(gd);
        touchPlan(gd, update);
        const colorbars = narrowPlan(gd, update) ? [] : reflowPlan(gd, update);
        if (colorbars === null) {
          legendPlan(gd, frame, update, renames);
          annotationPlan(gd, frame, update);
          axisTitlePlan(gd, frame, update);
          tickPlan(gd, frame, update);
          modebarPlan(gd, frame, update);
        }
        if (!Object.keys(update).length && !renames.length) break;
        if (update.height) gd.style.height = `${Math.round(update.height)}px`;  // the div grows with the figure
        if (Object.keys(update).length) await window.Plotly.relayout(gd, update);
        for (const {index, name} of renames) await window.Plotly.restyle(gd, {name: [name]}, [index]);
        for (const bar of colorbars || [])
          await window.Plotly.restyle(gd, {"colorbar.x": 0.84, "colorbar.xanchor": "left", "colorbar.y": bar.y,
                                           "colorbar.yanchor": "middle", "colorbar.len": bar.len}, [bar.index]);
      }
    } finally {
      if (gd._fullLayout) syncBox(gd);
      gd._fitting = false;
      gd.dataset.fitted = "1";
    }
  }

  function fitAll() {
    if (!window.Plotly) return;
    document.querySelectorAll(".js-plotly-plot").forEach(gd => {
      if (!gd._fitHooked && gd.on) {
        gd._fitHooked = true;
        gd.on("plotly_afterplot", () => setTimeout(() => fit(gd), 0));  // also after a resize redraws it
      }
      if (!gd.dataset.fitted) fit(gd);
    });
  }

  window.addEventListener("load", () => { fitAll(); setTimeout(fitAll, 500); });
  // A figure in a closed fold is drawn where nothing can be measured: redraw and fit it when its fold opens.
  document.addEventListener("toggle", event => {
    if (!event.target.open || !window.Plotly) return;
    event.target.querySelectorAll(".js-plotly-plot").forEach(gd => {
      delete gd.dataset.fitted; gd._fitPasses = 0;
      Promise.resolve(window.Plotly.Plots.resize(gd)).then(() => fit(gd));
    });
  }, true);  // toggle does not bubble: caught on its way down
  window.addEventListener("resize", () => {
    document.querySelectorAll(".js-plotly-plot").forEach(gd => { delete gd.dataset.fitted; gd._fitPasses = 0; });
  });
})();
