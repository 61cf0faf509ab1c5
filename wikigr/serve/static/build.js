// The build view of the page (index.html #view-build): see docs/serve.md. Uses app.js's helpers ($, el, t, api, status).
"use strict";
