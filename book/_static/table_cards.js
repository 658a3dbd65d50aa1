// Tables that read at any width: a table wider than the text column first gets a smaller font (class
// "table-compact"); one still too wide becomes cards (class "table-cards", book.css): one card per row, each cell
// under its column's name (data-label), so no table scrolls sideways. A table in a container of class
// "cards-when-narrow" (the front page's scoreboard) becomes cards on a narrow screen even where it fits: its few wide
// columns read better as full-width lines than as three columns of a few words each. Measured again when the window's
// width changes.
// When the tables have been fitted, <body> gets data-tables-fitted="1".
(() => {
  const column = () => document.querySelector("article.bd-article") || document.querySelector("main") || document.body;

  function tables() {
    return Array.from(column().querySelectorAll("table")).filter(t => !t.closest(".cell_input, .js-plotly-plot"));
  }

  // The name of each column (from the header rows; a cell spanning several columns names each of them; the names of
  // several header rows are joined with " · ").
  function columnNames(table) {
    const names = [];
    for (const row of (table.tHead ? table.tHead.rows : [])) {
      let index = 0;
      for (const cell of row.cells) {
        const text = cell.innerText.trim();
        for (let k = 0; k < (cell.colSpan || 1); k++, index++)
          if (text) names[index] = names[index] ? `${names[index]} · ${text}` : text;
      }
    }
    return names;
  }

  function label(table) {
    const names = columnNames(table);
    for (const row of table.tBodies.length ? Array.from(table.tBodies).flatMap(b => Array.from(b.rows)) : []) {
      let index = 0;
      for (const cell of row.cells) {
        if (cell.tagName === "TD" && names[index] && index > 0) cell.dataset.label = names[index];
        index += cell.colSpan || 1;
      }
    }
  }

  // The width a table may take: its box's (a scroll wrapper's, an output's), within the column's content.
  function room(table) {
    const style = getComputedStyle(column());
    const inner = column().clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
    return Math.min(inner, table.parentElement.clientWidth);
  }

  const NARROW = 600;
  const fits = table => table.getBoundingClientRect().width <= room(table) + 1 &&
                        !(window.innerWidth < NARROW && table.closest(".cards-when-narrow"));

  function fitTables() {
    for (const table of tables()) {
      table.classList.remove("table-compact", "table-cards");
      if (fits(table)) continue;
      table.classList.add("table-compact");
      if (fits(table)) continue;
      table.classList.remove("table-compact");
      label(table);
      table.classList.add("table-cards");
    }
    document.body.dataset.tablesFitted = "1";
  }

  let width = 0;
  window.addEventListener("load", () => { width = window.innerWidth; fitTables(); });
  window.addEventListener("resize", () => {
    if (window.innerWidth === width) return;  // a phone's toolbar showing or hiding changes only the height
    width = window.innerWidth;
    fitTables();
  });
})();
