import type { ComponentChildren } from 'preact';

/** A column's header: its text, or a header only screen readers read (a column of buttons). */
export type Column = string | { hidden: string };

/** A table with its caption and column headers (`scope="col"`); its rows are the children. */
export function DataTable({ caption, columns, children }: { caption: string; columns: Column[]; children: ComponentChildren }) {
  return (
    <table>
      <caption>{caption}</caption>
      <thead>
        <tr>
          {columns.map((c) => (
            <th scope="col" key={typeof c === 'string' ? c : c.hidden}>
              {typeof c === 'string' ? c : <span class="visually-hidden">{c.hidden}</span>}
            </th>
          ))}
        </tr>
      </thead>
      <tbody>{children}</tbody>
    </table>
  );
}
