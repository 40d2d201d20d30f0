package report

import "github.com/lockcheck/lockcheck/checker"

// resourceSection is the "resource" section of a run whose lock is a
// shape beyond the mutex (Meta.KeysAtResource): each key's most leases in
// their sections at once, against a semaphore's permits, and a read-write
// lock's longest writer overlap; a key past its rule is marked. A
// mutex's run has none (its double holders are the checkers' section's).
var resourceSection = Section{Name: "resource", Template: `{{with .}}<h2>At the resource</h2>
{{if .ReadWrite}}<p>Each key's most leases in their sections at once as the resource saw them (each surely inside), readers included, and the longest a writer's section overlapped another lease's: any overlap is a violation.</p>
<table><tr><th>key</th><th>peak holders</th><th>longest writer overlap (ms)</th><th></th></tr>
{{range .Rows}}<tr><td>{{.Key}}</td><td class="num">{{.Holders}}</td><td class="num">{{printf "%.3f" .OverlapMs}}</td><td>{{if .Broke}}<b>violation: a writer overlapped</b>{{else}}no writer overlapped{{end}}</td></tr>
{{end}}{{else}}<p>Each key's most leases in their sections at once as the resource saw them (each surely inside), against its permits k: more than k is a violation.</p>
<table><tr><th>key</th><th>peak holders</th><th>permits k</th><th></th></tr>
{{range .Rows}}<tr><td>{{.Key}}</td><td class="num">{{.Holders}}</td><td class="num">{{.Permits}}</td><td>{{if .Broke}}<b>violation: {{.Holders}} holders past {{.Permits}} permits</b>{{else}}within k{{end}}</td></tr>
{{end}}{{end}}</table>{{end}}`,
	Data: func(v *View) any {
		if len(v.Meta.KeysAtResource) == 0 {
			return nil
		}
		rw := readWrite(v.Findings)
		return struct {
			ReadWrite bool
			Rows      []keyRow
		}{rw, keyRows(v.Meta.KeysAtResource, rw)}
	}}

// keyRow is one key of the resource section, and of the run's summary.
type keyRow struct {
	checker.KeyPeak
	OverlapMs float64
	// Broke is a key past its shape's rule: a semaphore's more holders
	// than permits, a read-write lock's writer overlapping anyone.
	Broke bool
}

func keyRows(peaks []checker.KeyPeak, rw bool) []keyRow {
	rows := make([]keyRow, len(peaks))
	for i, p := range peaks {
		broke := p.Holders > int64(p.Permits)
		if rw {
			broke = p.WriterOverlapNs > 0
		}
		rows[i] = keyRow{p, float64(p.WriterOverlapNs) / 1e6, broke}
	}
	return rows
}

// readWrite says whether the mutex checker judged the history as a
// read-write lock's (readers' sections may overlap, so a key's peak
// holders stand against no permits): it then counts writer overlaps.
func readWrite(f checker.Findings) bool {
	c, _ := f.Checker("mutex")
	_, ok := c.Figures["writer_overlaps"]
	return ok
}
