package cmd

import (
	"fmt"
	"sort"
	"testing"
)

// k9sMinVersion is the oldest k9s that accepts plugins.yaml (k9sFeatures says why). The keys
// below are those it binds, read in its source, with the ones k9sLatestVersion added.
const (
	k9sMinVersion    = "v0.50.0"
	k9sLatestVersion = "v0.51.0"
)

// k9sKey is a key k9s binds itself in a view.
type k9sKey struct {
	action string
	// volatile: the table binds or unbinds the key on every refresh (ui.Table.doUpdate), after
	// plugins are loaded, so not even override: true lets a plugin keep it.
	volatile bool
	// table: the key is handled by the table widget (tview's Table.InputHandler), not by a k9s
	// action: k9s runs a plugin bound to it first and the table never sees the key, whatever
	// override says.
	table bool
}

// k9sViewKeys are the keys bound in the views plugins.yaml's scopes reach, by view, as k9s names
// them in a shortCut (tcell's key names, with k9s's own in internal/ui/key.go). Each list names
// the source it is read from, at k9sMinVersion unless it says k9sLatestVersion.
var k9sViewKeys = map[string]map[string]k9sKey{
	// Every view: internal/ui/app.go bindKeys (the prompt, redraw, ...) and
	// internal/view/app.go bindKeys (Shift-9 at k9sMinVersion only).
	"app": {
		":": {action: "Cmd"}, "Ctrl-R": {action: "Redraw"}, "Ctrl-P": {action: "Persist"},
		"Ctrl-U": {action: "Clear Filter"}, "Ctrl-Q": {action: "Clear Filter"}, "Shift-9": {action: "DumpGOR"},
		"Ctrl-E": {action: "ToggleHeader"}, "Ctrl-G": {action: "ToggleCrumbs"}, "?": {action: "Help"},
		"[": {action: "Go Back"}, "]": {action: "Go Forward"}, "-": {action: "Last View"},
		"Ctrl-A": {action: "Aliases"}, "Enter": {action: "Goto"}, "Ctrl-C": {action: "Quit"},
	},
	// Every resource table: internal/view/table.go bindKeys, internal/ui/table.go doUpdate,
	// internal/view/browser.go bindKeys, refreshActions and namespaceActions (Shift-S, Shift-O,
	// q and w from k9sLatestVersion).
	"table": {
		"?": {action: "Help"}, "space": {action: "Mark"}, "Ctrl-Space": {action: "Mark Range"},
		`Ctrl-\`: {action: "Marks Clear"}, "Ctrl-S": {action: "Save"}, "/": {action: "Filter Mode"},
		"Ctrl-Z": {action: "Toggle Faults"}, "Ctrl-W": {action: "Toggle Wide"},
		"Shift-N": {action: "Sort Name"}, "Shift-A": {action: "Sort Age"}, "Shift-S": {action: "Sort Status"},
		"Shift-O": {action: "Sort Selected Column"},
		"Shift-P": {action: "Sort Namespace (all-namespaces views)", volatile: true},
		"Esc":     {action: "Filter Reset"}, "q": {action: "Filter Reset"}, "Enter": {action: "View"},
		"c": {action: "Copy"}, "Ctrl-R": {action: "Refresh"}, "e": {action: "Edit"}, "Ctrl-D": {action: "Delete"},
		"y": {action: "YAML"}, "d": {action: "Describe"}, "n": {action: "Copy Namespace"},
		"w": {action: "Warp To Namespace"}, "0": {action: "all namespaces"}, "1": {action: "favorite namespace"},
		"2": {action: "favorite namespace"}, "3": {action: "favorite namespace"}, "4": {action: "favorite namespace"},
		"5": {action: "favorite namespace"}, "6": {action: "favorite namespace"}, "7": {action: "favorite namespace"},
		"8": {action: "favorite namespace"}, "9": {action: "favorite namespace"},
	},
	// The table widget itself: Table.InputHandler of github.com/derailed/tview v0.8.5 (the
	// version both k9s releases build with), its navigation keys.
	"tview-table": tableKeys(map[string]string{
		"g": "Goto Top", "Shift-G": "Goto Bottom", "j": "Down", "k": "Up", "h": "Left", "l": "Right",
		"Home": "Goto Top", "End": "Goto Bottom", "Up": "Up", "Down": "Down", "Left": "Left", "Right": "Right",
		"PgDn": "Page Down", "Ctrl-F": "Page Down", "PgUp": "Page Up", "Ctrl-B": "Page Up",
		"Enter": "Select", "Esc": "Done", "Tab": "Done", "Backtab": "Done",
	}),
	// A custom resource (no viewer of its own): internal/view/command.go viewMetaFor,
	// NewScaleExtender(NewOwnerExtender(NewBrowser)).
	"custom-resource": {
		"s": {action: "Scale"}, "Shift-J": {action: "Jump Owner"},
	},
	// internal/view/dp.go NewDeploy and bindKeys (its sort keys at k9sMinVersion, z from
	// k9sLatestVersion), with the extenders of withExtenderKeys.
	"deployments": withExtenderKeys(map[string]k9sKey{
		"Shift-R": {action: "Sort Ready"}, "Shift-U": {action: "Sort UpToDate"}, "Shift-L": {action: "Sort Available"},
		"z": {action: "ReplicaSets"},
	}),
	// internal/view/sts.go NewStatefulSet and bindKeys (k9sMinVersion), with the extenders.
	"statefulsets": withExtenderKeys(map[string]k9sKey{"Shift-R": {action: "Sort Ready"}}),
	// internal/view/ds.go NewDaemonSet and bindKeys (k9sMinVersion): the extenders but the scale
	// one, and its sort keys.
	"daemonsets": {
		"f": {action: "Show PortForward"}, "Shift-F": {action: "Port-Forward"},
		"v": {action: "Show Vulnerabilities"}, "Shift-V": {action: "Sort Vulnerabilities"}, "r": {action: "Restart"},
		"i": {action: "Set Image"}, "Shift-J": {action: "Jump Owner"}, "l": {action: "Logs"}, "p": {action: "Logs Previous"},
		"Shift-D": {action: "Sort Desired"}, "Shift-C": {action: "Sort Current"}, "Shift-R": {action: "Sort Ready"},
		"Shift-U": {action: "Sort UpToDate"}, "Shift-L": {action: "Sort Available"},
	},
}

// tableKeys marks keys as the table widget's.
func tableKeys(actions map[string]string) map[string]k9sKey {
	keys := map[string]k9sKey{}
	for k, a := range actions {
		keys[k] = k9sKey{action: a, table: true}
	}
	return keys
}

// withExtenderKeys adds the keys of the extenders k9s wraps Deployments and StatefulSets in:
// internal/view/pf_extender.go, vul_extender.go, restart_extender.go, scale_extender.go,
// image_extender.go, owner_extender.go and logs_extender.go.
func withExtenderKeys(keys map[string]k9sKey) map[string]k9sKey {
	for k, v := range map[string]k9sKey{
		"f": {action: "Show PortForward"}, "Shift-F": {action: "Port-Forward"},
		"v": {action: "Show Vulnerabilities"}, "Shift-V": {action: "Sort Vulnerabilities"}, "r": {action: "Restart"},
		"s": {action: "Scale"}, "i": {action: "Set Image"}, "Shift-J": {action: "Jump Owner"},
		"l": {action: "Logs"}, "p": {action: "Logs Previous"},
	} {
		keys[k] = v
	}
	return keys
}

// k9sScopeViews are the views of k9sViewKeys that show a scope of plugins.yaml.
var k9sScopeViews = map[string][]string{
	"tapps.apps.workload.dev":                    {"app", "table", "tview-table", "custom-resource"},
	"uniteddeployments.apps.workload.dev":        {"app", "table", "tview-table", "custom-resource"},
	"canaries.apps.workload.dev":                 {"app", "table", "tview-table", "custom-resource"},
	"analysistemplates.apps.workload.dev":        {"app", "table", "tview-table", "custom-resource"},
	"clusteranalysistemplates.apps.workload.dev": {"app", "table", "tview-table", "custom-resource"},
	"deployments":  {"app", "table", "tview-table", "deployments"},
	"statefulsets": {"app", "table", "tview-table", "statefulsets"},
	"daemonsets":   {"app", "table", "tview-table", "daemonsets"},
}

// k9sKeyCollisions lists the shortcuts of plugins that take a key k9s binds in a view their
// scopes reach: k9s refuses such a plugin ("duplicate plugin key") unless it says override: true,
// and even then cannot keep a volatile key; a key of the table widget is lost to the table
// (override or not).
func k9sKeyCollisions(plugins map[string]k9sPlugin) []string {
	var out []string
	for name, p := range plugins {
		for _, scope := range p.Scopes {
			views, ok := k9sScopeViews[scope]
			if !ok {
				out = append(out, fmt.Sprintf("%s: scope %s: no k9s view listed for it", name, scope))
				continue
			}
			for _, view := range views {
				key, taken := k9sViewKeys[view][p.ShortCut]
				switch {
				case !taken:
				case key.table:
					out = append(out, fmt.Sprintf("%s: %s in %s is the table's %q: the plugin would take it from every user of the view", name, p.ShortCut, scope, key.action))
				case key.volatile:
					out = append(out, fmt.Sprintf("%s: %s in %s is k9s's %q, rebound on every refresh (override cannot keep it)", name, p.ShortCut, scope, key.action))
				case !p.Override:
					out = append(out, fmt.Sprintf("%s: %s in %s is k9s's %q (another key, or override: true to take it over)", name, p.ShortCut, scope, key.action))
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

// No shortcut of plugins.yaml takes a key k9s or its table binds in a view its scopes reach.
func TestK9sPluginKeysFreeInK9s(t *testing.T) {
	for _, c := range k9sKeyCollisions(readPlugins(t)) {
		t.Errorf("k9s %s to %s: %s", k9sMinVersion, k9sLatestVersion, c)
	}
}

// The collision check refuses what k9s refuses or loses: the Shift-P promote shortcut of earlier
// plugins.yaml versions (k9s's sort by namespace), with or without override; the Shift-G resume
// shortcut of earlier versions (the table's Goto Bottom); a key a view binds; it accepts an
// override of a fixed key, and a key k9s leaves free.
func TestK9sPluginKeyCheckCatchesCollisions(t *testing.T) {
	const canaries, uds, tapps = "canaries.apps.workload.dev", "uniteddeployments.apps.workload.dev", "tapps.apps.workload.dev"
	for _, c := range []struct {
		plugin k9sPlugin
		want   bool
	}{
		{k9sPlugin{ShortCut: "Shift-P", Scopes: []string{canaries}}, true},
		{k9sPlugin{ShortCut: "Shift-P", Scopes: []string{uds}, Override: true}, true},
		{k9sPlugin{ShortCut: "Shift-G", Scopes: []string{tapps, "deployments"}}, true},
		{k9sPlugin{ShortCut: "Shift-G", Scopes: []string{canaries}, Override: true}, true},
		{k9sPlugin{ShortCut: "j", Scopes: []string{"statefulsets"}}, true},
		{k9sPlugin{ShortCut: "Shift-F", Scopes: []string{"deployments"}}, true},
		{k9sPlugin{ShortCut: "Shift-U", Scopes: []string{"deployments"}}, true},
		{k9sPlugin{ShortCut: "Shift-J", Scopes: []string{tapps}}, true},
		{k9sPlugin{ShortCut: "Shift-J", Scopes: []string{tapps}, Override: true}, false},
		{k9sPlugin{ShortCut: "Shift-F", Scopes: []string{canaries}}, false},
		{k9sPlugin{ShortCut: "Shift-U", Scopes: []string{canaries, uds, "statefulsets"}}, false},
		{k9sPlugin{ShortCut: "Shift-E", Scopes: []string{tapps, uds, canaries, "deployments"}}, false},
		{k9sPlugin{ShortCut: "Shift-U", Scopes: []string{"canaries"}}, true}, // a view the list does not cover
	} {
		got := k9sKeyCollisions(map[string]k9sPlugin{"p": c.plugin})
		if (len(got) > 0) != c.want {
			t.Errorf("%s on %v (override %v): collisions %v, want any: %v", c.plugin.ShortCut, c.plugin.Scopes, c.plugin.Override, got, c.want)
		}
	}
}
