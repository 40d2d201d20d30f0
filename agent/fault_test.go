package agent

import "testing"

// TestAgent_RefusesUnknownFault: an agent refuses, with an error the
// coordinator reports, a fault kind it does not know and a fault message
// without its value, rather than doing nothing silently.
func TestAgent_RefusesUnknownFault(t *testing.T) {
	a := &agentRun{}
	for name, f := range map[string]*Fault{"no fault": nil, "unknown kind": {Kind: "bogus"}, "client fault without its value": {Kind: FaultClient}} {
		if ids, err := a.fault(f); err == nil || ids != nil {
			t.Errorf("%s: ids %v, error %v; want an error", name, ids, err)
		}
	}
}
