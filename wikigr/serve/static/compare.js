// The compare view of the page (index.html #view-compare): see docs/serve.md. Uses app.js's helpers ($, el, t, api, status).
"use strict";
