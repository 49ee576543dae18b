package verify

// Exported for the external tests of this package (package verify_test,
// which imports internal/verifytest, itself built on this package).
var (
	JSONString   = jsonString
	DomainFields = domainFields
	EIP3009Typed = eip3009Typed
)

type TypedField = typedField
