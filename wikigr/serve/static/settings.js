// The settings view of the page (index.html #view-settings): see docs/serve.md. Uses app.js's helpers ($, el, t, api, status).
// A pack's kg_config.json as a form and as JSON (PUT /packs/{pack}/config), Claude and the model,
// the caches of $WIKIGR_HOME/cache/ with a button to clear each (DELETE /caches/{cache}).
"use strict";

const configuring = { ready: false, readOnly: false, pack: null, config: {}, shown: 0 };

function settingsStatus(message, isError = false) {
  const box = $("settings-status");
  box.textContent = message;
  box.classList.toggle("error", isError);
}

function settingsBytes(n) {
  const units = ["byte", "kilobyte", "megabyte", "gigabyte"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return new Intl.NumberFormat(LANG, { style: "unit", unit: units[i], unitDisplay: "short", maximumFractionDigits: 1 }).format(n);
}

async function settingsSetUp() {
  if (configuring.ready) { // opened again: the file and the caches may have changed meanwhile
    const name = $("settings-pack").value;
    await Promise.all([name ? settingsLoad(name) : null, settingsGeneral()]);
    return;
  }
  configuring.ready = true;
  const form = el("form", { id: "settings-form", class: "workbench", autocomplete: "off" },
    el("label", {}, t("settings.profile"), el("select", { id: "settings-profile" })),
    el("label", {}, t("settings.top_k"), el("input", { id: "settings-top-k", type: "number", min: "1", max: "100", placeholder: "5" })),
    el("label", { class: "grow" }, t("settings.model"), el("input", { id: "settings-model", type: "text", maxlength: "200" })),
    el("button", { id: "settings-save", type: "submit", text: t("settings.save") }));
  const raw = el("form", { id: "settings-raw", class: "raw", autocomplete: "off" },
    el("label", {}, t("settings.raw"), el("textarea", { id: "settings-json", rows: "10", spellcheck: "false" })),
    el("button", { id: "settings-save-json", type: "submit", text: t("settings.save_json") }));
  $("settings-root").replaceChildren(
    el("h2", { text: t("settings.pack_heading") }),
    el("label", { class: "pick" }, t("settings.pack"), el("select", { id: "settings-pack" })),
    el("p", { id: "settings-status", role: "status", "aria-live": "polite" }),
    el("dl", { id: "settings-effective", class: "info" }),
    form,
    el("details", {}, el("summary", { text: t("settings.raw_summary") }), raw),
    el("h2", { text: t("settings.claude_heading") }),
    el("dl", { id: "settings-claude", class: "info" }),
    el("h2", { text: t("settings.caches_heading") }),
    el("p", { class: "hint", text: t("settings.caches_hint") }),
    el("table", { id: "settings-caches", class: "grid" }));
  form.addEventListener("submit", settingsSaveForm);
  raw.addEventListener("submit", settingsSaveJson);
  try {
    const health = await serverHealth();
    configuring.readOnly = health.read_only === true;
    if (!page.packs.length) page.packs = (await api("/packs")).packs.filter((p) => p.ok);
  } catch (error) {
    settingsStatus(error.message, true);
    return;
  }
  if (configuring.readOnly) {
    for (const button of [$("settings-save"), $("settings-save-json")]) button.disabled = true;
  }
  const select = $("settings-pack");
  for (const pack of page.packs) select.append(el("option", { value: pack.name, text: pack.name }));
  const asked = $("pack").value;
  if (asked && page.packs.some((p) => p.name === asked)) select.value = asked;
  select.addEventListener("change", () => settingsLoad(select.value));
  await Promise.all([select.value ? settingsLoad(select.value) : null, settingsGeneral()]);
  if (configuring.readOnly) settingsStatus(t("settings.read_only"));
}

// The pack's kg_config.json, in the form and as JSON, and what is in effect.
async function settingsLoad(name) {
  try {
    settingsShow(await api(`/packs/${encodeURIComponent(name)}/config`));
  } catch (error) {
    settingsStatus(error.message, true);
  }
}

function settingsShow(data) {
  configuring.pack = data.pack;
  configuring.config = data.config;
  const profile = $("settings-profile");
  profile.replaceChildren(el("option", { value: "", text: t("settings.profile_unset") }), ...data.profiles.map((p) => el("option", { value: p, text: p })));
  profile.value = data.config.profile || "";
  $("settings-top-k").value = data.config.top_k ?? "";
  $("settings-model").value = data.config.model ?? "";
  $("settings-model").placeholder = data.effective.model;
  $("settings-json").value = JSON.stringify(data.config, null, 2);
  const rows = [
    [t("settings.in_effect"), t("settings.effective", { profile: data.effective.profile, top_k: data.effective.top_k })],
    [t("settings.answer_model"), data.effective.model],
    [t("settings.embedder"), t("settings.embedder_value", { name: data.embedder.name, dimension: data.embedder.dimension, backend: data.embedder.backend })],
    [t("settings.file"), data.exists ? t("settings.file_kept") : t("settings.file_none")],
  ];
  $("settings-effective").replaceChildren(...rows.flatMap(([key, value]) => [el("dt", { text: key }), el("dd", { text: value })]));
  if (data.problem) settingsStatus(data.problem, true);
  document.body.dataset.settingsShown = String(++configuring.shown); // for tests: the form is filled
}

async function settingsSave(config) {
  const name = configuring.pack;
  try {
    const data = await api(`/packs/${encodeURIComponent(name)}/config`, {
      method: "PUT",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(config),
    });
    settingsShow(data);
    settingsStatus(t("settings.saved", { pack: name }));
    document.body.dataset.settingsSaved = String(Date.now());
    if ($("pack").value === name) loadPack(name); // the Pack tab shows the new default
  } catch (error) {
    settingsStatus(error.message, true);
  }
}

function settingsSaveForm(event) {
  event.preventDefault();
  const config = { ...configuring.config };
  const fields = { profile: $("settings-profile").value, top_k: $("settings-top-k").value, model: $("settings-model").value.trim() };
  for (const [key, value] of Object.entries(fields)) {
    if (value === "") delete config[key];
    else config[key] = key === "top_k" ? Number(value) : value;
  }
  settingsSave(config);
}

function settingsSaveJson(event) {
  event.preventDefault();
  let config;
  try {
    config = JSON.parse($("settings-json").value);
  } catch (error) {
    settingsStatus(t("settings.bad_json", { error: error.message }), true);
    return;
  }
  settingsSave(config);
}

// Claude (configured or not: never the key) and the model; the caches, each with its button.
async function settingsGeneral() {
  let data;
  try {
    data = await api("/settings");
  } catch (error) {
    settingsStatus(error.message, true);
    return;
  }
  const model = data.model_from === "default" ? t("settings.model_default", { model: data.model }) : t("settings.model_env", { model: data.model });
  $("settings-claude").replaceChildren(
    el("dt", { text: t("settings.claude") }), el("dd", { text: data.claude ? t("settings.claude_yes") : t("settings.claude_no") }),
    el("dt", { text: t("settings.model") }), el("dd", { text: model }));
  const table = $("settings-caches");
  const head = el("tr", {}, ...[t("settings.cache"), t("settings.cache_files"), t("settings.cache_size"), ""].map((h) => el("th", { scope: "col", text: h })));
  const rows = data.caches.map((cache) => {
    const clear = el("button", { type: "button", class: "secondary", "data-cache": cache.name, text: t("settings.clear") });
    clear.disabled = configuring.readOnly;
    clear.addEventListener("click", () => settingsClear(cache.name));
    return el("tr", { "data-cache": cache.name }, el("th", { scope: "row", text: cache.name }),
      el("td", { text: COUNT.format(cache.files) }), el("td", { text: settingsBytes(cache.bytes) }), el("td", {}, clear));
  });
  table.replaceChildren(head, ...rows);
  if (!rows.length) table.append(el("tr", {}, el("td", { colspan: "4", class: "hint", text: t("settings.no_caches") })));
}

async function settingsClear(name) {
  try {
    const done = await api(`/caches/${encodeURIComponent(name)}`, { method: "DELETE" });
    settingsStatus(t("settings.cleared", { cache: name, size: settingsBytes(done.cleared.bytes) }));
  } catch (error) {
    settingsStatus(error.message, true);
  }
  await settingsGeneral();
}

document.addEventListener("wikigr:tab", (event) => {
  if (event.detail.id === "view-tab-settings") settingsSetUp();
});
