// Package route maps room ids to environments: an ordered list of rules
// (environment, regular expression), the first rule whose expression matches
// a room id wins, and an optional default environment takes the rest.
//
// One Table is the one routing setting of rostrum: the gateway sends each
// callback to the topics of its room's environment with it, and `rostrum
// run --env E` accepts only the rooms it routes to E (others go to the DLQ),
// so a room can never be ranked by an environment the gateway would not
// have sent it to. The package imports the standard library only.
//
// Text form (flag --route, ROSTRUM_ROUTE): "env=regex", several separated by
// commas or given as repeated flags, in order:
//
//	--route prod=^p-,gray=^g- --route test=^t- --route-default demo
//
// A comma splits rules only where the text after it starts a new
// "env=" (an environment name then '='), so a regular expression may hold
// commas ("^r{1,3}-") as long as the text after a comma does not look
// like the start of a rule.
package route
