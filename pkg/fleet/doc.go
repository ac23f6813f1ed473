// Package fleet reaches the member clusters a UnitedDeployment's subsets name
// (topology.subsets[].clusterProfileRef): it reads SIG-Multicluster ClusterProfiles on the agent's
// own (hub) cluster, builds each member's clients with the cluster-inventory-api access library
// (the provider file of --clusterprofile-provider-file, KEP-5339) behind the agent's write fence,
// and watches the member's subset workloads through informers filtered by the labels the
// UnitedDeployment controller puts on them (docs/architecture.md, "Fleet: member clusters").
//
// A member is built on first use, rebuilt when its ClusterProfile's access providers change and
// dropped when the profile goes. No credential is kept here: the access library hands the
// exec plugin to client-go, which runs it; the messages this package writes (Reachability) are
// redacted of anything that looks like a bearer token.
package fleet
