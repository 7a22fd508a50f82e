package api

// RuleRequestFields lets the tests hold the OpenAPI document to the rule
// API's request fields.
var RuleRequestFields = ruleRequestFields
