/* hip-triage HTML report: the one inline script, allowed by its hash in the page's Content-Security-Policy.
   It loads nothing. It adds copy buttons to the workaround commands and opens the collapsed
   source view an evidence link points into; without it the page still reads in full. */
(function () {
  "use strict";

  function idOf(fragment) { /* as the browser finds a fragment's element: the raw id first, then decoded */
    var raw = fragment.slice(1);
    if (document.getElementById(raw)) return raw;
    try { return decodeURIComponent(raw); } catch (err) { return raw; }
  }

  function openTo(id) {
    var target = document.getElementById(id);
    if (!target) return null;
    for (var d = target.closest("details"); d; d = d.parentElement && d.parentElement.closest("details")) {
      d.open = true;
    }
    var previous = document.querySelector(".targeted");
    if (previous) previous.classList.remove("targeted");
    target.classList.add("targeted");
    target.scrollIntoView();
    return target;
  }

  /* Internal links are followed here, not by the browser: an artefact name with quotes, markup or
     a % in it makes an id the browser's own fragment lookup cannot find, and a report shown from
     about:srcdoc would load its parent's address instead. */
  document.addEventListener("click", function (event) {
    var link = event.target.closest && event.target.closest('a[href^="#"]');
    if (!link) return;
    var id = idOf(link.getAttribute("href"));
    if (!openTo(id)) return;
    event.preventDefault();
    try { history.pushState(null, "", "#" + encodeURIComponent(id)); } catch (err) { /* an address without history */ }
  });
  window.addEventListener("popstate", function () { if (location.hash.length > 1) openTo(idOf(location.hash)); });
  if (location.hash.length > 1) openTo(idOf(location.hash));

  function selectAll(node) {
    var range = document.createRange();
    range.selectNodeContents(node);
    var selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
  }

  function copyBySelection(node) {
    selectAll(node);
    var done = false;
    try { done = document.execCommand("copy"); } catch (err) { done = false; }
    return done;
  }

  function copy(node) {
    var text = node.textContent;
    if (navigator.clipboard && window.isSecureContext) {
      return navigator.clipboard.writeText(text).then(function () { return true; },
        function () { return copyBySelection(node); });
    }
    return Promise.resolve(copyBySelection(node));
  }

  var blocks = document.querySelectorAll("pre.cmd");
  for (var i = 0; i < blocks.length; i++) {
    (function (pre) {
      var button = document.createElement("button");
      button.type = "button";
      button.className = "copy";
      button.textContent = "Copy";
      button.setAttribute("aria-label", "Copy these commands");
      var status = document.createElement("span");
      status.className = "copy-status";
      status.setAttribute("role", "status");
      button.addEventListener("click", function () {
        copy(pre.querySelector("code") || pre).then(function (ok) {
          status.textContent = ok ? "Copied" : "Selected: press Ctrl+C to copy";
          button.dataset.copied = ok ? "yes" : "no";
          if (!ok) selectAll(pre);
        });
      });
      var bar = document.createElement("div");
      bar.className = "copy-bar";
      bar.appendChild(button);
      bar.appendChild(status);
      pre.parentNode.insertBefore(bar, pre);
    })(blocks[i]);
  }
})();
