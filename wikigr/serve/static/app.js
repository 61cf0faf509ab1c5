// wikigr serve: the page. Plain JavaScript, no library; every picture is SVG drawn here.
"use strict";

const API = "/api/v1";
const SVG = "http://www.w3.org/2000/svg";
const $ = (id) => document.getElementById(id);

// -- words: each from the page's string table (static/i18n/LANG.json), which the server puts in
// the page in the language it chose (the switch's cookie, else the browser's Accept-Language)

const LANG = document.documentElement.lang || "en";
const LANG_COOKIE = "wikigr_lang";
const STRINGS = JSON.parse($("strings")?.textContent || "{}");
const PLURALS = new Intl.PluralRules(LANG);
const COUNT = new Intl.NumberFormat(LANG, { maximumFractionDigits: 0 });
const DECIMAL = new Intl.NumberFormat(LANG).formatToParts(1.5).find((p) => p.type === "decimal").value;

function fill(text, vars) {
  return text.replace(/\{(\w+)\}/g, (whole, name) => (name in vars ? String(vars[name]) : whole));
}

// The text of `key`, its {names} filled from `vars`.
function t(key, vars = {}) {
  const text = STRINGS[key];
  return typeof text === "string" ? fill(text, vars) : key;
}

// The text of `key` for the count `n` in the language's plural form, {n} and `vars` filled.
function plural(key, n, vars = {}) {
  const forms = STRINGS[key] || {};
  const text = forms[PLURALS.select(n)] ?? forms.other;
  return text === undefined ? key : fill(text, { ...vars, n: COUNT.format(n) });
}

// `value` with `digits` decimals, as the page's language writes them.
function fixed(value, digits) {
  return value.toFixed(digits).replace(".", DECIMAL);
}

// The switch: the choice is kept in a cookie (the server reads it for the page), then the page reloads.
function setUpLanguages() {
  for (const button of document.querySelectorAll("button[data-lang]")) {
    const lang = button.dataset.lang;
    button.setAttribute("aria-pressed", String(lang === LANG));
    button.addEventListener("click", () => {
      if (lang === LANG) return;
      document.cookie = `${LANG_COOKIE}=${lang}; path=/; max-age=31536000; samesite=strict`;
      location.reload();
    });
  }
}

const page = {
  packs: [],
  info: null,
  busy: false,
  health: null, // a promise of GET /health (serverHealth)
};

// -- small helpers ---------------------------------------------------------------------------

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else node.setAttribute(key, value);
  }
  for (const child of children) node.append(child);
  return node;
}

function svg(tag, attrs = {}, text) {
  const node = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, String(value));
  if (text !== undefined) node.textContent = text;
  return node;
}

function status(message, isError = false) {
  const box = $("status");
  box.textContent = message;
  box.classList.toggle("error", isError);
}

async function api(path, options = {}) {
  const response = await fetch(API + path, options);
  let data = null;
  try {
    data = await response.json();
  } catch (e) {
    throw new Error(`HTTP ${response.status}`);
  }
  if (!response.ok) throw new Error(data && data.error ? data.error : `HTTP ${response.status}`);
  return data;
}

// The server's health (version, read_only...), asked once for the page and its views.
function serverHealth() {
  if (!page.health) {
    page.health = api("/health");
    page.health.catch(() => { page.health = null; }); // a failure is asked again next time
  }
  return page.health;
}

function ms(value) {
  return t("unit.ms", { value: value >= 100 ? String(Math.round(value)) : fixed(value, 1) });
}

function truncate(text, n) {
  return text.length > n ? text.slice(0, n - 1) + "…" : text;
}

// -- tabs ------------------------------------------------------------------------------------

function tabsOf(tab) {
  return [...tab.closest('[role="tablist"]').querySelectorAll('[role="tab"]')];
}

function selectTab(tab, focus = true) {
  for (const other of tabsOf(tab)) {
    const selected = other === tab;
    other.setAttribute("aria-selected", String(selected));
    other.tabIndex = selected ? 0 : -1;
    $(other.getAttribute("aria-controls")).hidden = !selected;
  }
  if (focus) tab.focus();
  if (tab.id === "tab-graph" || (tab.id === "view-tab-ask" && $("tab-graph").ariaSelected === "true")) graph.resume();
  document.dispatchEvent(new CustomEvent("wikigr:tab", { detail: { id: tab.id } }));
}

// each tablist on its own: the views (ask, build, compare, settings) and the details beside an answer
function setUpTabs() {
  for (const list of document.querySelectorAll('[role="tablist"]')) setUpTabList(list);
}

function setUpTabList(list) {
  const tabs = [...list.querySelectorAll('[role="tab"]')];
  tabs.forEach((tab, i) => {
    tab.addEventListener("click", () => selectTab(tab));
    tab.addEventListener("keydown", (event) => {
      const step = { ArrowRight: 1, ArrowLeft: -1 }[event.key];
      if (step) {
        event.preventDefault();
        selectTab(tabs[(i + step + tabs.length) % tabs.length]);
      } else if (event.key === "Home" || event.key === "End") {
        event.preventDefault();
        selectTab(event.key === "Home" ? tabs[0] : tabs[tabs.length - 1]);
      }
    });
  });
}

// -- packs, profiles -------------------------------------------------------------------------

async function loadPacks() {
  const [packs, profiles] = await Promise.all([api("/packs"), api("/profiles")]);
  page.packs = packs.packs.filter((p) => p.ok);
  const select = $("pack");
  const chosen = select.value; // kept when the list is loaded again (a pack built or removed)
  select.replaceChildren();
  for (const pack of page.packs) {
    select.append(el("option", { value: pack.name, text: `${pack.name} (${packSize(pack)})` }));
  }
  if (page.packs.length > 1) select.append(el("option", { value: "all", text: t("form.all_packs") }));
  if (!page.packs.length) status(t("status.no_packs"), true);
  const profile = $("profile");
  const chosenProfile = profile.value;
  profile.replaceChildren(profile.options[0]); // called again after a build: the list anew
  for (const name of Object.keys(profiles.profiles)) profile.append(el("option", { value: name, text: name }));
  if (chosenProfile in profiles.profiles) profile.value = chosenProfile;
  const wanted = new URLSearchParams(location.search).get("pack");
  for (const name of [wanted, chosen]) if (name && [...select.options].some((o) => o.value === name)) select.value = name;
  select.onchange = () => loadPack(select.value);
  if (select.value) await loadPack(select.value);
}

// A pack's size in the list (`wikigr pack list`), in the page's language.
function packSize(row) {
  if (row.source_kind === "openml") return plural("pack.runs", row.runs);
  return `${plural("pack.articles", row.articles)}, ${plural("pack.option_chunks", row.chunks)}`;
}

async function loadPack(name) {
  const box = $("pack-info");
  const chart = $("eval-chart");
  graph.pack(name);
  if (name === "all") {
    box.replaceChildren(el("p", { class: "hint", text: t("pack.all") }));
    chart.replaceChildren(el("p", { class: "hint", text: t("eval.all_packs") }));
    return;
  }
  box.replaceChildren(el("p", { class: "hint", text: t("pack.opening", { name }) }));
  try {
    const [info, evals] = await Promise.all([api(`/packs/${encodeURIComponent(name)}`), api(`/packs/${encodeURIComponent(name)}/eval`)]);
    page.info = info;
    drawPackInfo(info);
    drawEval(evals);
  } catch (error) {
    box.replaceChildren(el("p", { class: "low", text: error.message }));
  }
}

function drawPackInfo(info) {
  const stats = info.store_stats || {};
  const size = info.source_kind === "openml"
    ? plural("pack.runs", stats.runs)
    : [plural("pack.articles", stats.articles), plural("pack.sections", stats.sections), plural("pack.chunks", stats.chunks)].join(", ");
  const entities = [plural("pack.entities", stats.entities), plural("pack.facts", stats.facts), plural("pack.relations", stats.relations)];
  const rows = [
    [t("pack.name"), info.name],
    [t("pack.description"), info.description || "—"],
    [t("pack.kind"), info.source_kind],
    [t("pack.size"), size],
    [t("pack.links"), String(stats.links ?? "—")],
    [t("pack.entity_graph"), info.entity_graph ? entities.join(", ") : t("pack.no_graph")],
    [t("pack.embedder"), t("pack.dimension", { name: info.embedder.name, dimension: info.embedder.dimension })],
    [t("pack.vector_search"), info.vector_search === "hnsw" ? t("pack.hnsw") : t("pack.exact")],
    [t("pack.default_profile"), `${info.profile}: ${info.stages.join(" → ")}`],
    [t("pack.answers"), info.claude ? t("pack.claude") : t("pack.extractive")],
    [t("pack.sources"), t("pack.fetched", { ok: info.sources.ok, total: info.sources.total })],
    [t("pack.created"), info.created_at],
    [t("pack.version"), `${info.version} (wikigr ${info.wikigr_version})`],
  ];
  const list = el("dl", { class: "info" });
  for (const [key, value] of rows) list.append(el("dt", { text: key }), el("dd", { text: value }));
  const parts = [list];
  if (info.titles && info.titles.length) {
    parts.push(el("h3", { text: t("pack.titles") }));
    const titles = el("ul", { class: "titles" });
    for (const title of info.titles.slice(0, 24)) titles.append(el("li", { text: title }));
    parts.push(titles);
  }
  $("pack-info").replaceChildren(...parts);
}

// -- asking ----------------------------------------------------------------------------------

async function ask(event) {
  event.preventDefault();
  if (page.busy) return;
  const question = $("question").value.trim();
  const pack = $("pack").value;
  if (!question || !pack) {
    status(question ? t("status.pick_pack") : t("status.type_question"), true);
    return;
  }
  const body = { pack, question };
  if ($("top-k").value) body.top_k = Number($("top-k").value);
  if ($("profile").value) body.profile = $("profile").value;
  page.busy = true;
  $("ask").disabled = true;
  const started = performance.now();
  status(t("status.searching"));
  const answer = $("answer");
  answer.replaceChildren();
  answer.classList.add("streaming");
  $("answer-meta").textContent = "";
  $("sources").replaceChildren();
  let result = null;
  try {
    const response = await fetch(`${API}/query/stream`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(body),
    });
    if (!response.ok) {
      let message = `HTTP ${response.status}`;
      try { message = (await response.json()).error || message; } catch (e) { /* not JSON */ }
      throw new Error(message);
    }
    let written = "";
    for await (const [name, data] of events(response)) {
      if (name === "sources") {
        drawSources(data.sources);
        status(t("status.writing"));
      } else if (name === "delta") {
        written += data.text;
        answer.textContent = written;
      } else if (name === "restart") {
        written = "";
        answer.textContent = "";
      } else if (name === "result") {
        result = data;
      } else if (name === "error") {
        throw new Error(data.error);
      }
    }
    if (!result) throw new Error(t("status.incomplete"));
    drawAnswer(result);
    drawSources(result.sources);
    drawTrace(result.trace);
    const seconds = fixed((performance.now() - started) / 1000, 2);
    status(t("status.answered", { seconds, trace: result.trace_id }));
    document.body.dataset.answeredMs = String(Math.round(performance.now())); // since the navigation began
    document.body.dataset.answered = result.trace_id;
    graph.load(result);
  } catch (error) {
    answer.replaceChildren(el("p", { class: "low", text: error.message }));
    status(error.message, true);
  } finally {
    answer.classList.remove("streaming");
    page.busy = false;
    $("ask").disabled = false;
  }
}

// Server-sent events from a fetch response: [event name, parsed data] pairs.
async function* events(response) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    buffer += decoder.decode(value || new Uint8Array(), { stream: !done });
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let name = "message";
      const data = [];
      for (const line of block.split("\n")) {
        if (line.startsWith("event:")) name = line.slice(6).trim();
        else if (line.startsWith("data:")) data.push(line.slice(5).trimStart());
      }
      if (data.length) yield [name, JSON.parse(data.join("\n"))];
    }
    if (done) return;
  }
}

function drawAnswer(result) {
  const answer = $("answer");
  answer.replaceChildren();
  const count = result.sources.length;
  let last = 0;
  const text = result.answer;
  for (const match of text.matchAll(/\[(\d{1,3})\]/g)) {
    const n = Number(match[1]);
    if (n < 1 || n > count) continue;
    answer.append(text.slice(last, match.index));
    answer.append(el("a", { class: "cite", href: `#source-${n}`, title: result.sources[n - 1].title, text: match[0] }));
    last = match.index + match[0].length;
  }
  answer.append(text.slice(last));
  const meta = [
    t("answer.profile", { profile: result.profile }),
    t("answer.mode", { mode: answerMode(result.trace.answer_mode) }),
    t("answer.confidence", { confidence: fixed(result.confidence, 3) }),
  ];
  $("answer-meta").replaceChildren(meta.join(" · "));
  if (result.low_confidence) {
    $("answer-meta").append(el("span", { class: "low", text: t("answer.low") }));
  }
}

function answerMode(mode) {
  const names = { claude: t("answer.mode.claude"), extractive: t("answer.mode.extractive") };
  return mode ? names[mode] || mode : t("answer.mode.none");
}

function drawSources(sources) {
  const list = $("sources");
  list.replaceChildren();
  sources.forEach((source, i) => {
    const where = source.section && source.section !== source.title ? `${source.title} › ${source.section}` : source.title;
    const item = el("li", { id: `source-${i + 1}` },
      el("span", { class: "where", text: where }),
      el("span", { class: "pack", text: source.pack }),
      el("span", { class: "score", text: fixed(source.score, 3) }),
      el("br"),
      el("a", { href: source.url, target: "_blank", rel: "noopener noreferrer", text: source.url }));
    if (source.origin === "multidoc") item.append(el("span", { class: "pack", text: t("answer.related") }));
    if (source.text) {
      item.append(el("details", {}, el("summary", { text: t("answer.passage") }), el("p", { text: source.text })));
    }
    list.append(item);
  });
}

// -- the trace: a bar per stage --------------------------------------------------------------

function drawTrace(trace) {
  const box = $("trace-chart");
  const stages = trace.stages || [];
  if (!stages.length) {
    box.replaceChildren(el("p", { class: "hint", text: t("trace.none") }));
    return;
  }
  const width = 560, row = 22, left = 150, right = 80, top = 26;
  const height = top + row * stages.length + 8;
  const most = Math.max(...stages.map((s) => s.ms), 0.001);
  const chart = svg("svg", { viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": t("trace.label", { total: ms(trace.total_ms) }) });
  const summary = { profile: trace.profile, total: ms(trace.total_ms), retrieval: ms(trace.retrieval_ms) };
  chart.append(svg("text", { x: 0, y: 14 }, t("trace.summary", summary)));
  stages.forEach((stage, i) => {
    const y = top + i * row;
    const length = Math.max(1, ((width - left - right) * stage.ms) / most);
    const kind = stage.skipped ? "bar skipped" : stage.stage.endsWith("synthesize") ? "bar synth" : "bar";
    const bar = svg("rect", { class: kind, x: left, y: y + 3, width: length, height: row - 8, rx: 2 });
    const note = stage.skipped ? t("trace.skipped", { reason: stage.skipped }) : plural("trace.passages", stage.out, { in: stage.in });
    bar.append(svg("title", {}, `${stage.stage}: ${ms(stage.ms)} (${note})`));
    chart.append(
      svg("text", { x: left - 6, y: y + row / 2 + 4, "text-anchor": "end" }, truncate(stage.stage, 24)),
      bar,
      svg("text", { class: "value", x: left + length + 4, y: y + row / 2 + 4 }, ms(stage.ms)),
    );
  });
  chart.append(svg("line", { class: "axis", x1: left, x2: left, y1: top, y2: height - 4 }));
  box.replaceChildren(chart);
}

// -- the evaluations: one group of bars per profile -------------------------------------------

const EVAL_METRICS = ["hit@1", "hit@5", "mrr", "recall@5", "f1", "judge_accuracy"];

function drawEval(evals) {
  const box = $("eval-chart");
  const profiles = Object.keys(evals.latest || {});
  if (!profiles.length) {
    box.replaceChildren(
      el("p", { class: "hint", text: plural("eval.none", evals.questions, { pack: evals.pack }) }),
      el("p", { class: "hint", text: t("eval.run", { command: `wikigr eval ${evals.pack} --all-profiles --judge offline` }) }));
    return;
  }
  const metrics = EVAL_METRICS.filter((m) => profiles.some((p) => typeof evals.latest[p].summary[m] === "number"));
  const width = 560, left = 90, barH = 12, gap = 10;
  const group = metrics.length * barH + gap;
  const height = 30 + profiles.length * group + 24;
  const chart = svg("svg", { viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": t("eval.label") });
  const colours = ["#1f5fbf", "#2e9e5b", "#e07b1a", "#7a4fd0", "#b42318", "#5b6475"];
  metrics.forEach((m, i) => {
    chart.append(svg("rect", { x: left + i * 85, y: 4, width: 10, height: 10, fill: colours[i] }));
    chart.append(svg("text", { x: left + i * 85 + 14, y: 13 }, m));
  });
  const scale = width - left - 60;
  profiles.forEach((profile, p) => {
    const run = evals.latest[profile];
    const y0 = 28 + p * group;
    chart.append(svg("text", { x: left - 6, y: y0 + (metrics.length * barH) / 2 + 4, "text-anchor": "end" }, profile));
    metrics.forEach((m, i) => {
      const value = run.summary[m];
      if (typeof value !== "number") return;
      const bar = svg("rect", { x: left, y: y0 + i * barH, width: Math.max(1, value * scale), height: barH - 2, fill: colours[i] });
      const about = { profile, metric: m, value: fixed(value, 3), date: run.date };
      bar.append(svg("title", {}, plural("eval.bar", run.summary.questions, about)));
      chart.append(bar, svg("text", { class: "value", x: left + value * scale + 4, y: y0 + i * barH + barH - 3 }, fixed(value, 2)));
    });
  });
  chart.append(svg("line", { class: "axis", x1: left, x2: left, y1: 24, y2: height - 20 }));
  const table = el("table", { class: "meta" });
  const heads = [t("eval.profile"), t("eval.questions"), t("eval.latency"), t("eval.judge"), t("eval.date")];
  table.append(el("tr", {}, ...heads.map((h) => el("th", { text: h }))));
  for (const profile of profiles) {
    const run = evals.latest[profile];
    const p50 = run.summary.latency_p50_ms;
    table.append(el("tr", {}, ...[profile, String(run.summary.questions), p50 === undefined ? "—" : ms(p50), run.judge || t("eval.judge_none"), run.date || ""].map((v) => el("td", { text: v }))));
  }
  box.replaceChildren(chart, table);
}

// -- start -----------------------------------------------------------------------------------

document.addEventListener("DOMContentLoaded", async () => {
  setUpLanguages();
  setUpTabs();
  $("ask-form").addEventListener("submit", ask);
  try {
    const health = await serverHealth();
    document.title = `wikigr ${health.version}`;
    await loadPacks();
    $("question").focus();
    document.body.dataset.readyMs = String(Math.round(performance.now()));
    document.body.dataset.ready = "yes";
  } catch (error) {
    status(t("status.unreachable", { error: error.message }), true);
  }
});
