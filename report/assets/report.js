// Marks the page as rendered (the browser test reads it) and lets a click on
// a violation's heading fold its details.
document.documentElement.dataset.rendered = "yes";
document.querySelectorAll(".violation h3").forEach(function (h) {
  h.style.cursor = "pointer";
  h.addEventListener("click", function () {
    var d = h.parentElement.querySelector(".details");
    if (d) { d.hidden = !d.hidden; }
  });
});
