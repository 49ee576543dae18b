package rail0test

import (
	"net/http"

	"github.com/rail0/rail0-go/internal/ops"
)

// The fake gateway serves the operations of the SDK's own table (package
// internal/ops). Their methods and path templates are read there, never
// restated here. A handler per operation is all this file adds.
// TestEveryOperationHasAHandler fails when an operation has none, or a
// handler no operation.

// Route patterns of the payment write operations, as Ledger and Fault name
// them.
var (
	routeCreatePayment    = pattern(ops.CreatePayment)
	routeSubmit           = pattern(ops.SubmitPaymentOperation)
	routeSubmitted        = pattern(ops.SubmitPaymentOperationByHash)
	routeDisputeSubmit    = pattern(ops.SubmitDispute)
	routeDisputeSubmitted = pattern(ops.SubmitDisputeByHash)
	routeCloseSubmit      = pattern(ops.SubmitCloseDispute)
	routeCloseSubmitted   = pattern(ops.SubmitCloseDisputeByHash)
)

// pattern is the ServeMux pattern of an operation: its method and path
// template. The root ("/") matches only itself.
func pattern(id ops.ID) string {
	op := ops.Get(id)
	if op.Template == "/" {
		return op.Method + " /{$}"
	}
	return op.Method + " " + op.Template
}

// handlers is the handler of each operation of the table.
func (s *Server) handlers() map[ops.ID]http.HandlerFunc {
	return map[ops.ID]http.HandlerFunc{
		ops.GetRoot:        s.handleRoot,
		ops.GetOpenapiSpec: s.handleOpenAPI,
		ops.GetHealth:      s.handleHealth,

		ops.CreateNonce: s.handleNonce,
		ops.VerifySiwe:  s.handleVerify,
		ops.Logout:      s.authed(s.handleLogout),

		ops.ListBlockchains:    s.handleBlockchains,
		ops.ListTokens:         s.handleTokens,
		ops.ListPaymentMethods: s.handlePaymentMethods,

		ops.ListAccountWallets:         s.authed(s.handleListWallets),
		ops.CreateWallet:               s.authed(s.handleCreateWallet),
		ops.GetWallet:                  s.authed(s.handleGetWallet),
		ops.UpdateWallet:               s.authed(s.handleUpdateWallet),
		ops.DeactivateWallet:           s.authed(s.handleDeactivateWallet),
		ops.GetWalletBalances:          s.authed(s.handleBalances),
		ops.EnableWalletToken:          s.authed(s.handleAddWalletToken),
		ops.DisableWalletToken:         s.authed(s.handleDeleteWalletToken),
		ops.EnableExistingWalletToken:  s.authed(s.handleToggleWalletToken(true)),
		ops.DisableExistingWalletToken: s.authed(s.handleToggleWalletToken(false)),

		ops.ListAccountDisputes: s.authed(s.handleAccountDisputes),

		ops.ListPayments:                 s.authed(s.handleListPayments),
		ops.CreatePayment:                s.authed(s.handleCreatePayment),
		ops.GetPayment:                   s.authed(s.handleGetPayment),
		ops.SignPayment:                  s.authed(s.handleSign),
		ops.ListPaymentTransactions:      s.authed(s.handleListTransactions),
		ops.ListDisputes:                 s.authed(s.handlePaymentDisputes),
		ops.PreparePaymentOperation:      s.authed(s.handlePrepare),
		ops.SubmitPaymentOperation:       s.authed(s.handleSubmit),
		ops.SubmitPaymentOperationByHash: s.authed(s.handleSubmitted),
		ops.PrepareDispute:               s.authed(s.handleDisputePrepare(opDispute)),
		ops.SubmitDispute:                s.authed(s.handleDisputeSubmit(opDispute)),
		ops.SubmitDisputeByHash:          s.authed(s.handleDisputeSubmitted(opDispute)),
		ops.PrepareCloseDispute:          s.authed(s.handleDisputePrepare(opCloseDispute)),
		ops.SubmitCloseDispute:           s.authed(s.handleDisputeSubmit(opCloseDispute)),
		ops.SubmitCloseDisputeByHash:     s.authed(s.handleDisputeSubmitted(opCloseDispute)),

		ops.AnalyticsSummary:    s.withAccount(s.handleSummary),
		ops.AnalyticsTimeseries: s.withAccount(s.handleTimeseries),
		ops.AnalyticsBreakdown:  s.withAccount(s.handleBreakdown),

		ops.ListWebhooks:              s.withAccount(s.handleListWebhooks),
		ops.CreateWebhook:             s.withAccount(s.handleCreateWebhook),
		ops.GetWebhook:                s.withAccount(s.handleGetWebhook),
		ops.UpdateWebhook:             s.withAccount(s.handleUpdateWebhook),
		ops.DeleteWebhook:             s.withAccount(s.handleDeleteWebhook),
		ops.EnableWebhook:             s.withAccount(s.handleWebhookSwitch("enable")),
		ops.DisableWebhook:            s.withAccount(s.handleWebhookSwitch("disable")),
		ops.RotateWebhookSecret:       s.withAccount(s.handleWebhookSwitch("rotate_secret")),
		ops.ResetWebhookCircuit:       s.withAccount(s.handleWebhookSwitch("reset_circuit")),
		ops.ListWebhookEventCallbacks: s.withAccount(s.handleEventCallbacks),
		ops.RedeliverEventCallback:    s.withAccount(s.handleRedeliver),
	}
}

// routes builds the mux: the table's operations with their handlers.
// Everything else gets a 404 in the contract's envelope.
func (s *Server) routes() *http.ServeMux {
	m := http.NewServeMux()
	handlers := s.handlers()
	for i := range ops.All() {
		if h := handlers[ops.ID(i)]; h != nil {
			m.HandleFunc(pattern(ops.ID(i)), h)
		}
	}
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, &apiError{status: http.StatusNotFound, code: "not_found", title: "Not found",
			detail: "No route matches " + r.Method + " " + r.URL.Path + "."})
	})
	return m
}
