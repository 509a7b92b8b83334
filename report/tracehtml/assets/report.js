// bringup trace report: sortable tables and the unit-tree filter. Plain DOM,
// no libraries, nothing fetched.
"use strict";
(function () {
  // A cell sorts by its data-v attribute when it has one (durations,
  // counts), else by its text; numbers sort as numbers.
  function cellValue(td) {
    var v = td.getAttribute("data-v");
    if (v === null) v = td.textContent.trim();
    var n = Number(v);
    return v !== "" && !isNaN(n) ? n : v.toLowerCase();
  }
  document.querySelectorAll("table.sortable").forEach(function (table) {
    table.querySelectorAll("th").forEach(function (th, col) {
      th.classList.add("sortable");
      var asc = false;
      th.addEventListener("click", function () {
        var body = table.tBodies[0];
        if (!body) return;
        asc = !asc;
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (a, b) {
          var x = cellValue(a.cells[col] || a), y = cellValue(b.cells[col] || b);
          if (x < y) return asc ? -1 : 1;
          if (x > y) return asc ? 1 : -1;
          return 0;
        });
        rows.forEach(function (r) { body.appendChild(r); });
      });
    });
  });
  var filter = document.getElementById("unit-filter");
  if (filter) {
    filter.addEventListener("input", function () {
      var q = filter.value.toLowerCase();
      document.querySelectorAll(".tree li[data-search]").forEach(function (li) {
        li.classList.toggle("hidden", q !== "" && li.getAttribute("data-search").indexOf(q) < 0);
      });
    });
  }
})();
