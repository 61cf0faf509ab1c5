// wikigr serve: sign in with the server's token; the server then sets an HttpOnly cookie.
// The page is served as it is (in English) before the token; its words in the reader's language
// (the switch's cookie, else Accept-Language) come from GET /login, the i18n table's login part.
"use strict";

const LANG_COOKIE = "wikigr_lang";

async function translate() {
  const response = await fetch("/login", { headers: { Accept: "application/json" } });
  if (!response.ok) return "en";
  const { lang, strings } = await response.json();
  document.documentElement.lang = lang;
  for (const node of document.querySelectorAll("[data-i18n]")) {
    const text = strings[node.dataset.i18n];
    if (typeof text !== "string") continue;
    // `code` in the table is shown as code
    node.replaceChildren(...text.split("`").map((part, i) => (i % 2 ? Object.assign(document.createElement("code"), { textContent: part }) : part)));
  }
  for (const node of document.querySelectorAll("*")) {
    for (const attr of node.getAttributeNames()) {
      if (!attr.startsWith("data-i18n-")) continue;
      const text = strings[node.getAttribute(attr)];
      if (typeof text === "string") node.setAttribute(attr.slice("data-i18n-".length), text);
    }
  }
  return lang;
}

function setUpLanguages(current) {
  for (const button of document.querySelectorAll("button[data-lang]")) {
    const lang = button.dataset.lang;
    button.setAttribute("aria-pressed", String(lang === current));
    button.onclick = () => {
      if (lang === current) return;
      document.cookie = `${LANG_COOKIE}=${lang}; path=/; max-age=31536000; samesite=strict`;
      location.reload();
    };
  }
}

document.addEventListener("DOMContentLoaded", async () => {
  const form = document.getElementById("login-form");
  const status = document.getElementById("status");
  setUpLanguages("en");
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const token = document.getElementById("token").value.trim();
    const response = await fetch("/login", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ token }),
    });
    if (response.ok) {
      location.reload();
      return;
    }
    let message = `HTTP ${response.status}`;
    try { message = (await response.json()).error || message; } catch (e) { /* not JSON */ }
    status.textContent = message;
  });
  try {
    setUpLanguages(await translate());
  } catch (e) { /* the page stays in English */ }
  document.body.dataset.ready = "yes";
});
