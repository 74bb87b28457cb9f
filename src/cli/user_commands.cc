#include "cli/user_commands.h"

#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "cli/command_context.h"
#include "cli/exit_codes.h"
#include "cli/login_store.h"
#include "cli/password_prompt.h"
#include "cli/table.h"
#include "common/env.h"
#include "wire/user_bodies.h"

namespace cohort::cli {
namespace {

int Login(const CommandContext& context, std::string name) {
  if (name.empty()) name = env::GetOr("COHORT_USER", "");
  if (name.empty()) name = "admin";
  std::string password = env::GetOr("COHORT_PASSWORD", "");
  if (password.empty()) {
    absl::StatusOr<std::string> typed = ReadPassword(absl::StrCat("Password for ", name, ": "));
    if (!typed.ok()) return Fail(typed.status());
    password = *std::move(typed);
  }
  client::MasterClient client = context.AnonymousClient();
  absl::StatusOr<wire::LoginResponse> login = LogIn(client, name, password);
  if (!login.ok()) return Fail(login.status());
  std::cout << "logged in to " << client.url() << " as " << login->username
            << (login->admin ? " (admin)" : "") << " until " << FormatTime(login->expires_ms)
            << "\n";
  return kExitOk;
}

int Logout(const CommandContext& context) {
  client::MasterClient client = context.Client();
  absl::Status revoked = client.Post("/api/v1/auth/logout").status();
  absl::Status forgotten = ForgetLogin(client.url());
  if (!forgotten.ok()) return Fail(forgotten);
  if (!revoked.ok() && !absl::IsUnauthenticated(revoked)) return Fail(revoked);
  std::cout << "logged out of " << client.url() << "\n";
  return kExitOk;
}

int WhoAmI(const CommandContext& context) {
  client::MasterClient client = context.Client();
  absl::StatusOr<wire::UserSummary> me = GetAs(client, "/api/v1/me", wire::ParseUserSummary);
  if (!me.ok()) return Fail(me.status());
  if (context.json()) return PrintJson(me->ToJson());
  std::cout << me->username << (me->admin ? " (admin)" : "") << " at " << client.url() << "\n";
  return kExitOk;
}

int ListUsers(const CommandContext& context) {
  client::MasterClient client = context.Client();
  absl::StatusOr<wire::UserList> list = GetAs(client, "/api/v1/users", wire::ParseUserList);
  if (!list.ok()) return Fail(list.status());
  if (context.json()) return PrintJson(list->ToJson());
  std::vector<std::vector<std::string>> rows;
  for (const wire::UserSummary& u : list->users) {
    rows.push_back({u.username, YesNo(u.admin), YesNo(u.active), FormatTime(u.created_ms)});
  }
  PrintTable(std::cout, {"user", "admin", "active", "created"}, rows);
  return kExitOk;
}

int CreateUser(const CommandContext& context, const std::string& name, bool admin) {
  absl::StatusOr<std::string> password =
      ReadNewPassword(absl::StrCat("Password for the new user ", name, ": "));
  if (!password.ok()) return Fail(password.status());
  absl::StatusOr<Json> r =
      context.Client().Post("/api/v1/users", wire::NewUser{name, *password, admin}.ToJson());
  if (!r.ok()) return Fail(r.status());
  std::cout << "created the user " << name << (admin ? " (admin)" : "") << "\n";
  return kExitOk;
}

// change-password (one's own, with the old one) and reset-password NAME (admins).
int SetPassword(const CommandContext& context, std::string name, bool own) {
  client::MasterClient client = context.Client();
  wire::PasswordChange change;
  if (own) {
    absl::StatusOr<wire::UserSummary> me = GetAs(client, "/api/v1/me", wire::ParseUserSummary);
    if (!me.ok()) return Fail(me.status());
    name = me->username;
    absl::StatusOr<std::string> old = ReadPassword("Current password: ");
    if (!old.ok()) return Fail(old.status());
    change.old_password = *std::move(old);
  }
  absl::StatusOr<std::string> password =
      ReadNewPassword(absl::StrCat("New password for ", name, ": "));
  if (!password.ok()) return Fail(password.status());
  change.password = *std::move(password);
  absl::StatusOr<Json> r =
      client.Post(absl::StrCat("/api/v1/users/", name, "/password"), change.ToJson());
  if (!r.ok()) return Fail(r.status());
  std::cout << "the password of " << name << " is set; " << name
            << "'s logins have ended (`cohort user login " << name << "`)\n";
  return kExitOk;
}

void AddAdminVerbs(CLI::App* user, CommandContext* context) {
  auto name = std::make_shared<std::string>();
  auto admin = std::make_shared<bool>(false);
  CLI::App* create = user->add_subcommand("create", "Create a user (admins; asks for a password)");
  create->add_option("name", *name, "User name ([A-Za-z0-9._-], up to 128 characters)")->required();
  create->add_flag("--admin", *admin, "Make the user an admin");
  context->OnRun(create, [context, name, admin] { return CreateUser(*context, *name, *admin); });

  CLI::App* list = user->add_subcommand("list", "Every user (admins)");
  list->alias("ls");
  context->AddJsonFlag(list);
  context->OnRun(list, [context] { return ListUsers(*context); });

  for (const std::string verb : {"activate", "deactivate"}) {
    auto target = std::make_shared<std::string>();
    CLI::App* sub = user->add_subcommand(
        verb, verb == "activate" ? "Let a deactivated user log in again (admins)"
                                 : "Stop a user from logging in and end their logins (admins)");
    sub->add_option("name", *target, "User name")->required();
    context->OnRun(sub, [context, target, verb] {
      absl::StatusOr<Json> r =
          context->Client().Post(absl::StrCat("/api/v1/users/", *target, "/", verb));
      if (!r.ok()) return Fail(r.status());
      std::cout << "user " << *target << ": " << verb << "d\n";
      return kExitOk;
    });
  }
  auto reset = std::make_shared<std::string>();
  CLI::App* reset_password =
      user->add_subcommand("reset-password", "Set another user's password (admins)");
  reset_password->add_option("name", *reset, "User name")->required();
  context->OnRun(reset_password,
                 [context, reset] { return SetPassword(*context, *reset, /*own=*/false); });
}

}  // namespace

void AddUserCommands(CLI::App* root, CommandContext* context) {
  CLI::App* user = root->add_subcommand("user", "Users: log in and out, manage users (admins)");
  user->alias("u");
  user->require_subcommand(1);
  auto name = std::make_shared<std::string>();
  CLI::App* login = user->add_subcommand(
      "login", "Log in to the master and keep the token (~/.config/cohort/auth.json)");
  login->add_option("name", *name,
                    "User name (default: $COHORT_USER, else admin); the password is asked for, "
                    "or taken from $COHORT_PASSWORD");
  context->OnRun(login, [context, name] { return Login(*context, *name); });
  CLI::App* logout = user->add_subcommand("logout", "End this login (the token is revoked)");
  context->OnRun(logout, [context] { return Logout(*context); });
  CLI::App* whoami = user->add_subcommand("whoami", "Who this CLI is logged in as");
  context->AddJsonFlag(whoami);
  context->OnRun(whoami, [context] { return WhoAmI(*context); });
  CLI::App* change = user->add_subcommand("change-password", "Change your own password");
  context->OnRun(change, [context] { return SetPassword(*context, "", /*own=*/true); });
  AddAdminVerbs(user, context);
}

}  // namespace cohort::cli
