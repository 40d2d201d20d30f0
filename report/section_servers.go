package report

// serversSection is the "servers" section of a run on an external Redis:
// the key prefix, the round trip that widened the clock tolerance, and
// the settings each server reported that decide what a lock can promise
// (persistence, replication, its version).
var serversSection = Section{Name: "servers", Template: `{{with .}}<h2>External Redis</h2>
<p>Every key under <code>{{.KeyPrefix}}</code>{{if .User}}, as user <code>{{.User}}</code>{{end}}{{if .TLS}}, over TLS{{end}}; worst PING round trip {{.RoundTrip}} (added to the clock tolerance unless --clock-tolerance was given).</p>
<table><tr>{{range $.Names}}<th>{{.}}</th>{{end}}</tr>
{{range $s := .Servers}}<tr>{{range $.Names}}<td>{{or (index $s .) "?"}}</td>{{end}}</tr>
{{end}}</table><p class="muted">? : the server did not say (INFO or CONFIG GET not permitted to the user).</p>{{end}}`,
	Data: func(v *View) any {
		if v.Meta.External == nil {
			return nil
		}
		return struct {
			*RunExternal
			Names []string
		}{v.Meta.External, serverFacts}
	}}

// serverFacts are the columns of the servers table: what cluster.Facts
// may hold.
var serverFacts = []string{"node", "addr", "version", "mode", "role", "appendonly", "appendfsync",
	"min-replicas-to-write", "replicas", "replication-lag-bytes"}
