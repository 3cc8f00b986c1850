//! A cluster listener secured with SASL/PLAIN (`security.protocol.map: SECURE:SASL`, JAAS
//! users): the host authenticates both its Fluss client and its own coordinator connections
//! (heartbeat, prepare, commit) and tiers a table exactly; a wrong password is one clear error
//! line at startup, and the password is never logged.

use std::time::Duration;

use fluss::metadata::TablePath;
use fluss_lake_e2e::lake_check::{business, wait_registered};
use fluss_lake_e2e::{cluster, data, host, paimon, unique_name};

fn sasl_args(bootstrap: &str, user: &str, password: &str) -> Vec<String> {
    host::args(
        bootstrap,
        &[host::plugin("paimon")],
        &[
            "--datalake.format",
            "paimon",
            "--fluss.client.security.protocol",
            "SASL",
            "--fluss.client.security.sasl.username",
            user,
            "--fluss.client.security.sasl.password",
            password,
            "--tiering.poll.table.interval",
            "1s",
        ],
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sasl_listener_is_tiered_with_plain_credentials_and_a_wrong_password_is_one_error() {
    let c = cluster::lease("paimon");
    let conn = fluss_lake_e2e::connect(&c.bootstrap).await;
    let admin = conn.get_admin().unwrap();
    let path = TablePath::new("fluss", unique_name("sasl"));
    data::create_table(&admin, &path, &data::lake_log_table(2, Some("id"), "2s")).await;
    data::write_rows(&conn, &path, 0, 3_000, 1_000).await;
    let ends = data::all_log_end_offsets(&admin, &path).await;

    // A wrong password: one error line naming the user, not the password.
    let out = host::run_to_exit(
        &sasl_args(&c.sasl_bootstrap, "tiering", "not-the-password"),
        Duration::from_secs(90),
    );
    let error = host::the_error_line(&out);
    assert!(
        error.contains("refused SASL/PLAIN authentication of user 'tiering'"),
        "{error}"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("not-the-password"), "{stderr}");

    let (user, password) = cluster::SASL_USERS[1];
    let mut h = host::HostProcess::spawn(
        &sasl_args(&c.sasl_bootstrap, user, password),
        &format!("{}-host", path.table()),
    );
    wait_registered(&c, &admin, &path, &ends, &h).await;
    assert_eq!(
        business(&paimon::rows(
            &c.paimon_warehouse,
            "fluss",
            path.table(),
            None
        )),
        data::sorted_by_id(data::canonical_rows(&data::batch(0, 3_000))),
    );
    let log = h.log();
    assert!(
        !log.contains(password),
        "the password reached the log:\n{log}"
    );
    assert!(h.exited().is_none(), "{log}");
}
