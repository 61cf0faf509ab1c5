// The settings view of the page (index.html #view-settings): see docs/serve.md. Uses app.js's helpers ($, el, t, api, status).
"use strict";
