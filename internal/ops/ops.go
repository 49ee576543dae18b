// Package ops is the gateway contract's operations in one table.
// The SDK's methods (package rail0) and the fake gateway's routes (package
// rail0test) both read it, so neither restates a path by hand. A row is
// the contract's operationId, method and path template. It also says what
// repeating the operation does (its retry class) and why.
//
// Adding an operation takes one constant and one row here. The root gets
// one method, with declare(ops.X) beside it, and rail0test one handler.
// Two tests hold the pieces together. The root's
// TestOperationsMatchTheContract holds every row against the contract
// (testdata/openapi.json). rail0test's TestEveryOperationHasAHandler holds
// the handlers to the rows.
package ops

// ID names an operation of the contract: its row in the table.
// Each constant is the operationId with its first letter in capitals.
type ID int

// The contract's operations, but the chain indexer's /sync routes.
const (
	// The service descriptor and the contract.
	GetRoot ID = iota
	GetOpenapiSpec

	// Health.
	GetHealth

	// Sign-in with Ethereum.
	CreateNonce
	VerifySiwe
	Logout

	// The catalog.
	ListBlockchains
	ListTokens
	ListPaymentMethods

	// A merchant account's wallets.
	ListAccountWallets
	CreateWallet
	GetWallet
	UpdateWallet
	DeactivateWallet
	GetWalletBalances
	EnableWalletToken
	DisableWalletToken
	EnableExistingWalletToken
	DisableExistingWalletToken

	// Disputes across payments.
	ListAccountDisputes

	// Payments.
	CreatePayment
	GetPayment
	ListPayments
	ListPaymentTransactions
	ListDisputes
	SignPayment
	PreparePaymentOperation
	PrepareDispute
	PrepareCloseDispute
	SubmitPaymentOperation
	SubmitDispute
	SubmitCloseDispute
	SubmitPaymentOperationByHash
	SubmitDisputeByHash
	SubmitCloseDisputeByHash

	// Analytics.
	AnalyticsSummary
	AnalyticsTimeseries
	AnalyticsBreakdown

	// Webhooks.
	CreateWebhook
	ListWebhooks
	GetWebhook
	UpdateWebhook
	DeleteWebhook
	EnableWebhook
	DisableWebhook
	RotateWebhookSecret
	ResetWebhookCircuit
	ListWebhookEventCallbacks
	RedeliverEventCallback

	count // the number of operations
)

// Class says what repeating an operation would do.
// It is decided per operation of the gateway contract, not per HTTP
// method. PUT /webhooks/{id}/rotate_secret is a PUT that must not run
// twice. A prepare is a POST that the gateway deduplicates.
type Class int

const (
	// Once means running it twice has two effects. Or a second run is answered
	// as a failure although the first one worked. Never repeated after it
	// may have run; its outcome is then unknown.
	Once Class = iota
	// Read means no effect at all.
	Read
	// Repeatable means a repetition has the effect of one.
	Repeatable
	// Keyed means deduplicated by the gateway when it carries an
	// Idempotency-Key, the same on every attempt. Once without one.
	Keyed
)

// Repeatable reports whether an attempt that may have run can be sent again.
func (c Class) Repeatable(hasIdempotencyKey bool) bool {
	return c == Read || c == Repeatable || (c == Keyed && hasIdempotencyKey)
}

// Matters reports whether the caller must learn that an attempt may have
// run. It does when the operation has an effect that a repetition would not
// reproduce.
func (c Class) Matters() bool { return c == Once || c == Keyed }

// Operation is one row of the table.
type Operation struct {
	// ID is the contract's operationId.
	ID string
	// Method is the HTTP method.
	Method string
	// Template is the path relative to the base URL, with its leading
	// slash. "{...}" stands for one segment, named as the contract names it.
	Template string
	// Class is what repeating the operation does (the gateway guide,
	// sections 4 and 9). Why says why, for a write.
	Class Class
	Why   string
}

// table is every operation, in the order of the constants.
var table = [count]Operation{
	// The service descriptor and the contract.
	GetRoot:        {"getRoot", "GET", "/", Read, ""},
	GetOpenapiSpec: {"getOpenapiSpec", "GET", "/openapi.json", Read, ""},

	// Health.
	GetHealth: {"getHealth", "GET", "/health", Read, ""},

	// Sign-in with Ethereum.
	CreateNonce: {"createNonce", "POST", "/auth/nonces", Repeatable, "a second nonce is issued and expires unused"},
	VerifySiwe:  {"verifySiwe", "POST", "/auth", Once, "consumes the nonce: a repeat is refused with nonce_used"},
	Logout:      {"logout", "POST", "/auth/logout", Once, "a repeat with the revoked token is refused with 401"},

	// The catalog.
	ListBlockchains:    {"listBlockchains", "GET", "/blockchains", Read, ""},
	ListTokens:         {"listTokens", "GET", "/tokens", Read, ""},
	ListPaymentMethods: {"listPaymentMethods", "GET", "/payment_methods", Read, ""},

	// A merchant account's wallets.
	ListAccountWallets:         {"listAccountWallets", "GET", "/accounts/{account_id}/wallets", Read, ""},
	CreateWallet:               {"createWallet", "POST", "/accounts/{account_id}/wallets", Once, "a repeat is refused with 409: the address is registered"},
	GetWallet:                  {"getWallet", "GET", "/accounts/{account_id}/wallets/{id}", Read, ""},
	UpdateWallet:               {"updateWallet", "PATCH", "/accounts/{account_id}/wallets/{id}", Repeatable, "sets the given fields"},
	DeactivateWallet:           {"deactivateWallet", "DELETE", "/accounts/{account_id}/wallets/{id}", Repeatable, "soft deactivation"},
	GetWalletBalances:          {"getWalletBalances", "GET", "/accounts/{account_id}/wallets/{id}/balances", Read, ""},
	EnableWalletToken:          {"enableWalletToken", "POST", "/accounts/{account_id}/wallets/{id}/tokens", Repeatable, "an upsert: a repeat answers 200 with the same holding"},
	DisableWalletToken:         {"disableWalletToken", "DELETE", "/accounts/{account_id}/wallets/{id}/tokens/{token_id}", Repeatable, "soft disable"},
	EnableExistingWalletToken:  {"enableExistingWalletToken", "PATCH", "/accounts/{account_id}/wallets/{id}/tokens/{token_id}/enable", Repeatable, "sets a state"},
	DisableExistingWalletToken: {"disableExistingWalletToken", "PATCH", "/accounts/{account_id}/wallets/{id}/tokens/{token_id}/disable", Repeatable, "sets a state"},

	// Disputes across payments.
	ListAccountDisputes: {"listAccountDisputes", "GET", "/disputes", Read, ""},

	// Payments.
	CreatePayment:                {"createPayment", "POST", "/payments", Keyed, "the Idempotency-Key replays the payment it created"},
	GetPayment:                   {"getPayment", "GET", "/payments/{id}", Read, ""},
	ListPayments:                 {"listPayments", "GET", "/payments", Read, ""},
	ListPaymentTransactions:      {"listPaymentTransactions", "GET", "/payments/{id}/transactions", Read, ""},
	ListDisputes:                 {"listDisputes", "GET", "/payments/{id}/disputes", Read, ""},
	SignPayment:                  {"signPayment", "PUT", "/payments/{id}/sign", Repeatable, "stores the one payer signature"},
	PreparePaymentOperation:      {"preparePaymentOperation", "POST", "/payments/{id}/{operation}/prepare", Repeatable, "preparing again returns the pending transaction"},
	PrepareDispute:               {"prepareDispute", "POST", "/payments/{id}/dispute/prepare", Repeatable, "preparing again reuses the pending transaction"},
	PrepareCloseDispute:          {"prepareCloseDispute", "POST", "/payments/{id}/dispute/close/prepare", Repeatable, "builds an unsigned transaction; nothing moves"},
	SubmitPaymentOperation:       {"submitPaymentOperation", "POST", "/payments/{id}/{operation}", Once, "a raw transaction is broadcast; a repeat is not deduplicated"},
	SubmitDispute:                {"submitDispute", "POST", "/payments/{id}/dispute", Once, "a raw transaction is broadcast; a repeat is not deduplicated"},
	SubmitCloseDispute:           {"submitCloseDispute", "POST", "/payments/{id}/dispute/close", Once, "a raw transaction is broadcast; a repeat is not deduplicated"},
	SubmitPaymentOperationByHash: {"submitPaymentOperationByHash", "POST", "/payments/{id}/{operation}/submitted", Repeatable, "reporting a hash again is allowed until it confirms"},
	SubmitDisputeByHash:          {"submitDisputeByHash", "POST", "/payments/{id}/dispute/submitted", Repeatable, "reporting a hash again is allowed until it confirms"},
	SubmitCloseDisputeByHash:     {"submitCloseDisputeByHash", "POST", "/payments/{id}/dispute/close/submitted", Repeatable, "reporting a hash again is allowed until it confirms"},

	// Analytics.
	AnalyticsSummary:    {"analyticsSummary", "GET", "/analytics/summary", Read, ""},
	AnalyticsTimeseries: {"analyticsTimeseries", "GET", "/analytics/timeseries", Read, ""},
	AnalyticsBreakdown:  {"analyticsBreakdown", "GET", "/analytics/breakdown", Read, ""},

	// Webhooks.
	CreateWebhook:             {"createWebhook", "POST", "/webhooks", Once, "a repeat creates a second subscription"},
	ListWebhooks:              {"listWebhooks", "GET", "/webhooks", Read, ""},
	GetWebhook:                {"getWebhook", "GET", "/webhooks/{id}", Read, ""},
	UpdateWebhook:             {"updateWebhook", "PATCH", "/webhooks/{id}", Repeatable, "sets the given fields"},
	DeleteWebhook:             {"deleteWebhook", "DELETE", "/webhooks/{id}", Repeatable, "deletes"},
	EnableWebhook:             {"enableWebhook", "PUT", "/webhooks/{id}/enable", Repeatable, "sets a state"},
	DisableWebhook:            {"disableWebhook", "PUT", "/webhooks/{id}/disable", Repeatable, "sets a state"},
	RotateWebhookSecret:       {"rotateWebhookSecret", "PUT", "/webhooks/{id}/rotate_secret", Once, "a second rotation invalidates the secret the first returned"},
	ResetWebhookCircuit:       {"resetWebhookCircuit", "PUT", "/webhooks/{id}/reset_circuit", Repeatable, "sets a state"},
	ListWebhookEventCallbacks: {"listWebhookEventCallbacks", "GET", "/webhooks/{id}/event_callbacks", Read, ""},
	RedeliverEventCallback:    {"redeliverEventCallback", "POST", "/webhooks/{id}/event_callbacks/{callback_id}/redeliver", Once, "a repeat queues a second delivery"},
}

// Get returns the row of id.
func Get(id ID) Operation { return table[id] }

// All returns every row, in the order of the constants.
func All() []Operation { return append([]Operation(nil), table[:]...) }
