// HiveMem inspector: the only script. Keyboard: "/" focuses the search box.
// Nothing here is needed to use a page; forms and links work without it.
(function () {
  "use strict";
  document.addEventListener("keydown", function (event) {
    if (event.key !== "/" || event.ctrlKey || event.metaKey || event.altKey) return;
    var target = event.target;
    var tag = target && target.tagName;
    if (tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT" || (target && target.isContentEditable)) return;
    var box = document.querySelector("[data-hotkey='/']");
    if (box) { event.preventDefault(); box.focus(); box.select(); }
  });
})();
