// wikigr serve: sign in with the server's token; the server then sets an HttpOnly cookie.
"use strict";

document.addEventListener("DOMContentLoaded", () => {
  const form = document.getElementById("login-form");
  const status = document.getElementById("status");
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
});
