// wikigr serve: the Graph tab, an SVG force layout. A pack of passages is drawn around an answer's
// passages (chunks, pages, entities); an OpenML pack as its Kimball star: before a question its
// schema, after one the facts the answer aggregated (one node per group, with its runs) and the
// algorithms, families, datasets, tasks and dates of their runs. Loaded after app.js, whose helpers
// ($, el, svg, t, plural, fixed, api, truncate, page) it uses.
"use strict";

const STAR_KINDS = ["fact", "algorithm", "family", "dataset", "task", "date"];

function kindName(kind) {
  const names = {
    chunk: t("graph.kind.chunk"),
    article: t("graph.kind.article"),
    entity: t("graph.kind.entity"),
    fact: t("star.kind.fact"),
    algorithm: t("star.kind.algorithm"),
    family: t("star.kind.family"),
    dataset: t("star.kind.dataset"),
    task: t("star.kind.task"),
    date: t("star.kind.date"),
  };
  return names[kind] || kind;
}

// Whether the pack answers from a star of runs rather than passages (its row in the pack list).
function starPack(name) {
  const row = page.packs.find((p) => p.name === name);
  return Boolean(row && row.source_kind === "openml");
}

// A measure's value as the page's language writes it, with 3 decimals.
function measureValue(value) {
  return fixed(value, 3);
}

const graph = {
  nodes: [],
  edges: [],
  frame: 0,
  heat: 0,
  width: 680,
  height: 520,
  drag: null,
  star: null, // what the star drawn shows: {view, measure, pack}

  // The pack picked: an OpenML pack's star schema until a question is asked.
  async pack(name) {
    this.star = null;
    if (!starPack(name)) {
      $("panel-graph").querySelector(":scope > .hint").hidden = false;
      $("graph").replaceChildren();
      $("graph-detail").textContent = "";
      return;
    }
    await this.fetch([[name, "limit=60"]]);
  },

  // The graph behind an answer: for each pack of its sources, what that pack draws of it.
  async load(result) {
    const packs = [...new Set(result.sources.map((s) => s.pack).filter(Boolean))];
    if (!packs.length) {
      $("graph").replaceChildren(el("p", { class: "hint", text: t("graph.empty") }));
      $("graph-detail").textContent = "";
      return;
    }
    await this.fetch(packs.map((pack) => [pack, `trace=${encodeURIComponent(result.trace_id)}&limit=60`]));
  },

  async explore(pack, entity) {
    await this.fetch([[pack, `entity=${encodeURIComponent(entity)}&limit=60`]]);
  },

  async exploreStar(pack, member, measure) {
    await this.fetch([[pack, `member=${encodeURIComponent(member)}&measure=${encodeURIComponent(measure)}&limit=60`]]);
  },

  async fetch(requests) {
    const box = $("graph");
    try {
      const parts = await Promise.all(requests.map(([pack, query]) => api(`/packs/${encodeURIComponent(pack)}/graph?${query}`)));
      const several = parts.length > 1;
      const nodes = [], edges = [];
      let withEntities = false;
      let star = null;
      for (const part of parts) {
        withEntities ||= part.entity_graph;
        if (part.star) star = { ...part.star, pack: part.pack };
        const prefix = several ? `${part.pack}/` : "";
        for (const n of part.nodes) nodes.push({ ...n, id: prefix + n.id, pack: part.pack, raw: n.id });
        for (const e of part.edges) edges.push({ ...e, source: prefix + e.source, target: prefix + e.target });
      }
      this.star = star;
      $("panel-graph").querySelector(":scope > .hint").hidden = Boolean(star); // the passages' colours
      this.draw(nodes, edges);
      if (star) {
        box.prepend(this.legend(star));
        $("graph-detail").textContent = "";
      } else {
        $("graph-detail").textContent = withEntities ? "" : t("graph.no_entities");
      }
    } catch (error) {
      box.replaceChildren(el("p", { class: "low", text: error.message }));
    }
  },

  // What the star shows, and its colours.
  legend(star) {
    const about = {
      schema: star.why ? t("star.no_facts") : t("star.schema"),
      answer: t("star.answer"),
      member: t("star.member"),
    }[star.view];
    const legend = el("p", { class: "legend", "aria-label": t("star.legend") });
    for (const kind of STAR_KINDS) legend.append(el("span", { class: kind }), kindName(kind));
    return el("div", { class: "star-about" }, el("p", { class: "hint", text: about || "" }), legend);
  },

  draw(nodes, edges) {
    const { width, height } = this;
    const index = new Map();
    this.nodes = nodes.map((n, i) => {
      const angle = (2 * Math.PI * i) / Math.max(1, nodes.length);
      const r = n.focus ? 60 : 160;
      const node = { ...n, x: width / 2 + r * Math.cos(angle), y: height / 2 + r * Math.sin(angle), vx: 0, vy: 0 };
      node.charge = n.kind === "fact" && !n.table ? 2.5 : 1; // facts push apart: their members gather round each
      index.set(n.id, node);
      return node;
    });
    this.edges = edges.filter((e) => index.has(e.source) && index.has(e.target))
      .map((e) => ({ ...e, a: index.get(e.source), b: index.get(e.target) }));
    const picture = svg("svg", { viewBox: `0 0 ${width} ${height}`, role: "group", "aria-label": plural("graph.label", nodes.length) });
    const lines = svg("g");
    const dots = svg("g");
    for (const e of this.edges) {
      e.line = svg("line", { class: e.kind });
      const title = e.label || (typeof e.runs === "number" ? plural("star.runs", e.runs) : "");
      if (title) e.line.append(svg("title", {}, title));
      lines.append(e.line);
    }
    for (const n of this.nodes) {
      n.r = this.radius(n);
      const label = n.table ? `${n.label} (${COUNT.format(n.rows)})` : n.label || n.raw;
      n.g = svg("g", { class: `node ${n.kind}${n.focus ? " focus" : ""}`, tabindex: 0, role: "button", "aria-label": `${kindName(n.kind)}: ${label}` });
      n.g.append(svg("circle", { class: n.kind, r: n.r }), svg("text", { x: n.r + 3, y: 4 }, truncate(label, 28)));
      n.g.addEventListener("pointerdown", (event) => this.grab(event, n));
      n.g.addEventListener("click", () => this.select(n)); // a click the picture did not capture
      n.g.addEventListener("keydown", (event) => {
        if (event.key === "Enter" || event.key === " ") { event.preventDefault(); this.select(n); }
      });
      dots.append(n.g);
    }
    picture.append(lines, dots);
    picture.addEventListener("pointermove", (event) => this.move(event));
    picture.addEventListener("pointerup", (event) => this.release(event));
    picture.addEventListener("pointerleave", () => this.release());
    this.svg = picture;
    $("graph").replaceChildren(picture);
    this.heat = 1;
    this.settle(120); // a first layout at once, then it keeps moving while shown
    this.render();
    this.resume();
  },

  radius(n) {
    if (n.table) return 12;
    if (n.kind === "fact") return (n.focus ? 8 : 6) + Math.min(6, Math.log10(1 + (n.runs || 0)));
    const radius = n.kind === "article" ? 9 : n.kind === "chunk" ? 7 : 6;
    return n.focus ? radius + 3 : radius;
  },

  select(n) {
    for (const other of this.nodes) other.g.classList.toggle("selected", other === n);
    const box = $("graph-detail");
    const parts = [el("strong", { text: `${kindName(n.kind)}: ${n.label}` })];
    if (n.type) parts.push(` (${n.type})`);
    if (n.text) parts.push(el("p", { text: n.text }));
    if (this.star && STAR_KINDS.includes(n.kind)) parts.push(...this.starDetail(n));
    if (n.url) parts.push(el("br"), el("a", { href: n.url, target: "_blank", rel: "noopener noreferrer", text: n.url }));
    if (n.kind === "entity") {
      const more = el("button", { type: "button", class: "link", text: t("graph.explore") });
      more.addEventListener("click", () => this.explore(n.pack, n.raw.slice("entity:".length)));
      parts.push(el("br"), more);
    }
    box.replaceChildren(...parts);
  },

  // What a node of the star says: its rows, or its runs, statistic, best score and filter; and
  // for a member of a dimension, a button to explore its runs.
  starDetail(n) {
    const lines = [];
    if (n.table) {
      lines.push(plural("star.rows", n.rows));
    } else if (n.kind === "fact") {
      lines.push(n.datasets ? `${plural("star.runs", n.runs)} ${plural("star.datasets", n.datasets)}` : plural("star.runs", n.runs));
      if (typeof n.value === "number") {
        const value = n.statistic === "count" ? COUNT.format(n.value) : measureValue(n.value);
        lines.push(t("star.statistic", { statistic: n.statistic, measure: n.measure, value }));
      }
      if (n.best) lines.push(t("star.best_run", { run: n.best.run, measure: n.measure, value: measureValue(n.best.value) }));
      const filters = Object.entries({ ...(n.filters || {}), ...(n.group || {}) })
        .map(([key, value]) => `${key} = ${Array.isArray(value) ? value.join(" | ") : typeof value === "object" ? JSON.stringify(value) : value}`);
      if (filters.length) lines.push(t("star.filter", { filter: filters.join(", ") }));
    } else {
      if (typeof n.runs === "number") lines.push(plural("star.runs", n.runs));
      if (typeof n.best === "number") lines.push(t("star.best", { measure: n.measure, value: measureValue(n.best) }));
      if (typeof n.score === "number") lines.push(t("star.score", { value: fixed(n.score, 3) }));
      if (n.filter) lines.push(t("star.filter", { filter: n.filter }));
    }
    const parts = lines.map((line) => el("p", { text: line }));
    if (n.kind === "fact" && n.source) {
      parts.push(el("a", { href: `#source-${n.source}`, text: t("star.cited", { n: n.source }) }));
    }
    if (n.best && n.best.url) {
      parts.push(el("br"), el("a", { href: n.best.url, target: "_blank", rel: "noopener noreferrer", text: n.best.url }));
    }
    if (!n.table && n.kind !== "fact") {
      const more = el("button", { type: "button", class: "link", text: t("star.explore") });
      more.addEventListener("click", () => this.exploreStar(n.pack, n.raw, this.star.measure));
      parts.push(el("br"), more);
    }
    return parts;
  },

  point(event) {
    const box = this.svg.getBoundingClientRect();
    return { x: ((event.clientX - box.left) * this.width) / box.width, y: ((event.clientY - box.top) * this.height) / box.height };
  },

  // A press on a node: dragged, it moves; let go where it was pressed, it is selected (the
  // picture captures the pointer while a node is held, so the node itself gets no click).
  grab(event, n) {
    this.drag = n;
    this.pressed = { x: event.clientX, y: event.clientY };
    n.fixed = true;
    this.svg.setPointerCapture(event.pointerId);
    this.heat = Math.max(this.heat, 0.5);
    this.resume();
  },

  move(event) {
    if (!this.drag) return;
    const p = this.point(event);
    this.drag.x = p.x;
    this.drag.y = p.y;
    this.render();
  },

  release(event) {
    const n = this.drag;
    if (n) n.fixed = false;
    if (n && event && this.pressed && Math.hypot(event.clientX - this.pressed.x, event.clientY - this.pressed.y) < 4) this.select(n);
    this.drag = null;
    this.pressed = null;
  },

  settle(steps) {
    for (let i = 0; i < steps && this.heat > 0.01; i++) this.step();
  },

  step() {
    const nodes = this.nodes, cx = this.width / 2, cy = this.height / 2;
    for (let i = 0; i < nodes.length; i++) {
      const a = nodes[i];
      for (let j = i + 1; j < nodes.length; j++) {
        const b = nodes[j];
        let dx = a.x - b.x, dy = a.y - b.y;
        let d2 = dx * dx + dy * dy;
        if (d2 < 0.01) { dx = Math.random() - 0.5; dy = Math.random() - 0.5; d2 = 0.5; }
        const force = (1500 * a.charge * b.charge) / d2;
        const d = Math.sqrt(d2);
        a.vx += (force * dx) / d; a.vy += (force * dy) / d;
        b.vx -= (force * dx) / d; b.vy -= (force * dy) / d;
      }
    }
    for (const e of this.edges) {
      const dx = e.b.x - e.a.x, dy = e.b.y - e.a.y;
      const d = Math.max(1, Math.sqrt(dx * dx + dy * dy));
      const rest = e.kind === "in" ? 45 : e.kind === "relation" ? 80 : e.a.kind === "fact" ? 95 : 70;
      const pull = ((d - rest) / d) * 0.06;
      e.a.vx += dx * pull; e.a.vy += dy * pull;
      e.b.vx -= dx * pull; e.b.vy -= dy * pull;
    }
    for (const n of nodes) {
      n.vx += (cx - n.x) * 0.006;
      n.vy += (cy - n.y) * 0.006;
      if (n.fixed) { n.vx = 0; n.vy = 0; continue; }
      n.x += Math.max(-12, Math.min(12, n.vx * this.heat));
      n.y += Math.max(-12, Math.min(12, n.vy * this.heat));
      n.vx *= 0.5; n.vy *= 0.5;
      n.x = Math.max(12, Math.min(this.width - 12, n.x));
      n.y = Math.max(12, Math.min(this.height - 12, n.y));
    }
    this.heat *= 0.985;
  },

  render() {
    for (const e of this.edges) {
      e.line.setAttribute("x1", e.a.x.toFixed(1)); e.line.setAttribute("y1", e.a.y.toFixed(1));
      e.line.setAttribute("x2", e.b.x.toFixed(1)); e.line.setAttribute("y2", e.b.y.toFixed(1));
    }
    for (const n of this.nodes) n.g.setAttribute("transform", `translate(${n.x.toFixed(1)},${n.y.toFixed(1)})`);
  },

  resume() {
    if (this.frame || !this.nodes.length || $("panel-graph").hidden) return;
    const tick = () => {
      this.step();
      this.render();
      this.frame = this.heat > 0.02 || this.drag ? requestAnimationFrame(tick) : 0;
    };
    this.frame = requestAnimationFrame(tick);
  },
};
