// wikigr serve: sign in with the server's token; the server then sets an HttpOnly cookie.
// The server fills the page in the reader's language (the switch's cookie, else Accept-Language)
// before the token; the switch sets the cookie and loads the page again.
"use strict";

const LANG_COOKIE = "wikigr_lang";

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
  setUpLanguages(document.documentElement.lang || "en");
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
  document.body.dataset.ready = "yes";
});
