package main

// deprecatedFlags maps each old flag name that still works to its new name
// (docs/DESIGN.md §15).
var deprecatedFlags = map[string]string{}
