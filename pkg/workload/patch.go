package workload

import (
	"encoding/json"
)

// mergePatch builds the JSON merge patch that sets one field: {"a":{"b":value}}.
func mergePatch(path []string, value interface{}) ([]byte, error) {
	for i := len(path) - 1; i >= 0; i-- {
		value = map[string]interface{}{path[i]: value}
	}
	return json.Marshal(value)
}
