#pragma once
// `cohort user ...`: logging in and out (login, logout, whoami), one's own password
// (change-password), and for admins the users themselves (create, list, activate, deactivate,
// reset-password). Logins are kept per master by login_store.h.

namespace CLI {
class App;
}  // namespace CLI

namespace cohort::cli {

class CommandContext;

void AddUserCommands(CLI::App* root, CommandContext* context);

}  // namespace cohort::cli
