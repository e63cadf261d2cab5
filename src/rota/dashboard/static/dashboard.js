// rota dashboard: asks before destructive actions, and previews a schedule's next runs while
// its edit form is typed in. Pages work without it.
"use strict";
document.addEventListener("submit", (event) => {
  const form = event.target;
  const question = form instanceof HTMLFormElement ? form.dataset.confirm : undefined;
  if (question && !window.confirm(question)) {
    event.preventDefault();
  }
});

// The preview is an HTML fragment rendered (and escaped) by the server, from the same code
// that saving validates with; only the answer to the latest request is shown.
for (const form of document.querySelectorAll("form[data-preview]")) {
  const output = form.querySelector(".preview");
  let timer = 0;
  let latest = 0;
  form.addEventListener("input", () => {
    window.clearTimeout(timer);
    timer = window.setTimeout(async () => {
      const asked = ++latest;
      const query = new URLSearchParams({
        cron: form.elements.namedItem("cron").value,
        tz: form.elements.namedItem("tz").value,
      });
      try {
        const response = await fetch(`${form.dataset.preview}?${query}`);
        const html = await response.text();
        if (response.ok && asked === latest) {
          output.innerHTML = html;
          const invalid = output.querySelector("[data-field]")?.dataset.field;
          for (const name of ["cron", "tz"]) {
            const input = form.elements.namedItem(name);
            if (name === invalid) input.setAttribute("aria-invalid", "true");
            else input.removeAttribute("aria-invalid");
          }
        }
      } catch {
        // Offline or logged out: the last preview stays until the next answer.
      }
    }, 250);
  });
}
